//! Proves the Delta test harness (`rayquet_testkit::delta_tables`) against delta-kernel 0.29's
//! default engine (`Scan::execute`, the reference every rayquet Delta test compares with):
//!
//! * every golden table the kernel compares reads as its `expected/` rows; every negative one
//!   fails (with the error 0.29 gives); the skipped and unlisted ones behave as recorded here;
//! * the comparison rule accepts what the kernel's ignores and rejects real differences;
//! * every table written with the kernel reads back, at every readable version, as the rows the
//!   fixture wrote minus the rows it deleted (an expectation computed without any Delta reader),
//!   and `scan_metadata` lists the files and deletion vectors the fixture committed.
use rayquet_testkit::delta_tables;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType as ArrowType, Field, Int64Type, Schema};
use delta_kernel::schema::{ColumnMetadataKey, MetadataColumnSpec};
use delta_kernel::{Engine, Expression, Predicate, Snapshot};

use delta_tables::*;

// ---------------------------------------------------------------------------------------------
// Golden tables
// ---------------------------------------------------------------------------------------------

#[test]
fn golden_archives_are_all_classified() {
    let mut on_disk: Vec<String> = std::fs::read_dir(golden_dir())
        .expect("golden dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".tar.zst").map(str::to_string)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = GOLDEN_TABLES.iter().map(|t| t.name.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "GOLDEN_TABLES must name every archive once"
    );
    assert_eq!(compared_tables().len(), 67);
    assert_eq!(skipped_tables().len(), 11);
    assert_eq!(negative_tables().len(), 7);

    for t in GOLDEN_TABLES {
        let dir = unpack(t.name);
        assert!(dir.join("delta").is_dir(), "{}: no delta/", t.name);
        let has_expected = dir.join("expected").is_dir();
        match t.kind {
            GoldenKind::Compared => assert!(has_expected, "{}: compared without expected/", t.name),
            GoldenKind::Negative(_) | GoldenKind::Unlisted(_) | GoldenKind::Checkpoint => {
                assert!(!has_expected, "{}: unexpected expected/", t.name)
            }
            GoldenKind::Skipped(_) => {}
        }
    }
}

#[test]
fn golden_unpack_once_for_all_threads() {
    let name = "basic-decimal-table";
    let dirs: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || unpack(name)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("unpack thread"))
        .collect();
    assert!(dirs.windows(2).all(|w| w[0] == w[1]), "{dirs:?}");
    assert!(dirs[0].starts_with(std::env::temp_dir().join("rayquet-delta-golden")));
    assert!(dirs[0]
        .join("delta/_delta_log/00000000000000000000.json")
        .is_file());
    let (_, rows) = expected_table(name);
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 4);
}

#[test]
fn golden_compared_tables_equal_expected() {
    check_compared_golden("the default engine", |url| {
        let read = read_table(url, &ReadOptions::default()).map_err(|e| error_message(&e))?;
        Ok((read.schema, read.batches))
    });
}

#[test]
fn golden_negative_tables_fail() {
    let problems = negative_golden_problems(
        "the default engine",
        &[],
        |url| match read_table(url, &ReadOptions::default()) {
            Ok(read) => Ok(read.num_rows()),
            Err(e) => Err(error_message(&e)),
        },
        |_, _| None,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn golden_checkpoint_table() {
    // The kernel's own `checkpoint_test`: version 14 and one scan-metadata batch. (Its data files
    // are 1-byte placeholders, so the table cannot be read, only listed.)
    let engine = local_engine();
    let url = golden_table_url("checkpoint");
    let snapshot = Snapshot::builder_for(url.as_str())
        .build(engine.as_ref())
        .expect("snapshot");
    assert_eq!(snapshot.version(), 14);
    let scan = snapshot.scan_builder().build().expect("scan");
    let batches = scan
        .scan_metadata(engine.as_ref())
        .expect("scan_metadata")
        .collect::<Result<Vec<_>, _>>()
        .expect("scan metadata batches");
    assert_eq!(batches.len(), 1);
    let files = scan_files(&url, &ReadOptions::default()).expect("scan files");
    assert!(!files.is_empty());
    let err = read_table(&url, &ReadOptions::default()).expect_err("placeholder data files");
    assert!(error_message(&err).contains("less than footer"), "{err}");
}

/// `compare_tables` between a golden table's expected rows and the default engine's, with the
/// `skip` columns left out of both.
fn compare_golden(name: &str, skip: &[&str]) -> Result<(), String> {
    let read = read_table(&golden_table_url(name), &ReadOptions::default())
        .map_err(|e| error_message(&e))?;
    let (schema, expected) = expected_table(name);
    let drop = |schema: &Schema, batches: &[RecordBatch]| {
        let keep: Vec<usize> = (0..schema.fields().len())
            .filter(|i| !skip.contains(&schema.field(*i).name().as_str()))
            .collect();
        let projected = Arc::new(schema.project(&keep).unwrap());
        let batches: Vec<RecordBatch> = batches.iter().map(|b| b.project(&keep).unwrap()).collect();
        (projected, batches)
    };
    let (es, eb) = drop(&schema, &expected);
    let (rs, rb) = drop(&read.schema, &read.batches);
    compare_tables(&es, &eb, &rs, &rb)
}

#[test]
fn golden_skipped_tables_behave_as_recorded() {
    // Comparable under this harness' rule (it ignores nested nullability and list item names,
    // and sorts struct/map columns too): the kernel's reasons no longer apply in 0.29.
    for name in [
        "data-skipping-basic-stats-all-types-columnmapping-id",
        "parquet-all-types",
        "parquet-all-types-legacy-format",
    ] {
        compare_golden(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    // The expected as_timestamp values are wrong (the kernel's reason): everything else agrees.
    let err = compare_golden("data-reader-partition-values", &[]).expect_err("as_timestamp");
    assert!(err.contains("2021-09-08T18:11:11Z"), "{err}");
    assert!(err.contains("2021-09-08T11:11:11Z"), "{err}");
    compare_golden("data-reader-partition-values", &["as_timestamp"]).unwrap();

    // hive: no _delta_log at all.
    let err = read_table(&golden_table_url("hive"), &ReadOptions::default()).unwrap_err();
    assert!(
        error_message(&err).contains("No table version found"),
        "{err}"
    );

    // The canonicalization bug is still in 0.29: `remove` of the same absolute path written
    // differently (`file:/x` vs `/x`, `file:///x` vs `/x`) does not cancel the `add`.
    for name in [
        "canonicalized-paths-normal-a",
        "canonicalized-paths-normal-b",
        "canonicalized-paths-special-a",
        "canonicalized-paths-special-b",
    ] {
        let url = golden_table_url(name);
        let files = scan_files(&url, &ReadOptions::default()).unwrap();
        assert_eq!(files.len(), 1, "{name}: {files:?}");
        assert!(
            files[0].path.contains("/some/unqualified/"),
            "{name}: {files:?}"
        );
    }

    // What Delta's own test asserts for these two (the kernel has no data to compare).
    let files = scan_files(
        &golden_table_url("delete-re-add-same-file-different-transactions"),
        &ReadOptions::default(),
    )
    .unwrap();
    let by_name: HashMap<&str, i64> = files
        .iter()
        .map(|f| (f.path.as_str(), f.modification_time))
        .collect();
    assert_eq!(by_name.len(), 2, "{files:?}");
    assert_eq!(by_name.get("foo"), Some(&1_700_000_000_000));
    assert!(by_name.contains_key("bar"));

    let files = scan_files(
        &golden_table_url("log-replay-special-characters-b"),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "special%20p@%23h");
    let fs_path = files[0].location.to_file_path().unwrap();
    assert_eq!(fs_path.file_name().unwrap(), "special p@#h");
}

#[test]
fn golden_unlisted_tables_fail_to_load() {
    // Shipped for Delta's log-level tests; none has a metaData action the kernel accepts.
    for (name, want) in [
        (
            "data-reader-absolute-paths-escaped-chars",
            "No table metadata found",
        ),
        ("deltalog-commit-info", "schemaString"),
        ("update-deleted-directory", "schemaString"),
    ] {
        assert!(matches!(golden_kind(name), Some(GoldenKind::Unlisted(_))));
        let err = read_table(&golden_table_url(name), &ReadOptions::default()).unwrap_err();
        assert!(error_message(&err).contains(want), "{name}: {err}");
    }
}

#[test]
fn golden_scan_file_listing_agrees_with_the_rows() {
    // For every compared table whose adds all carry stats: rows read = Σ numRecords − Σ |DV|.
    let mut checked = 0;
    let mut with_dv = Vec::new();
    for name in compared_tables() {
        let url = golden_table_url(name);
        let files = scan_files(&url, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {}", error_message(&e)));
        if files.iter().any(|f| f.num_records.is_none()) {
            continue;
        }
        let mut rows = 0u64;
        for f in &files {
            let deleted = f.deleted_rows.as_ref().map_or(0, |d| d.len() as u64);
            assert_eq!(f.has_dv, f.deleted_rows.is_some(), "{name}: {f:?}");
            if f.has_dv {
                with_dv.push(name);
            }
            rows += f.num_records.unwrap() - deleted;
            assert!(
                f.location.as_str().starts_with(url.as_str()),
                "{name}: {f:?}"
            );
        }
        let expected: usize = expected(name).iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, expected as u64, "{name}");
        checked += 1;
    }
    assert!(checked >= 35, "only {checked} tables have stats everywhere");
    for dv_table in [
        "dv-partitioned-with-checkpoint",
        "dv-with-columnmapping",
        "log-replay-dv-key-cases",
    ] {
        assert!(with_dv.contains(&dv_table), "{dv_table} lists no DV");
    }
}

// ---------------------------------------------------------------------------------------------
// The comparison rule
// ---------------------------------------------------------------------------------------------

fn two_columns(ids: &[i64], names: &[Option<&str>], nullable: bool) -> (Arc<Schema>, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, nullable),
        Field::new("name", ArrowType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(names.to_vec())),
        ],
    )
    .unwrap();
    (schema, batch)
}

#[test]
fn comparison_rule() {
    let (s, b) = two_columns(&[1, 2, 3], &[Some("a"), None, Some("c")], true);
    // Other row order, other batch boundaries, other column order, other nullability and
    // field metadata: equal.
    let (_, shuffled) = two_columns(&[3, 1, 2], &[Some("c"), Some("a"), None], false);
    let reordered_schema = Arc::new(Schema::new(vec![
        Field::new("name", ArrowType::Utf8, true)
            .with_metadata([("k".to_string(), "v".to_string())].into()),
        Field::new("id", ArrowType::Int64, false),
    ]));
    let reordered = RecordBatch::try_new(
        reordered_schema.clone(),
        vec![shuffled.column(1).clone(), shuffled.column(0).clone()],
    )
    .unwrap();
    let parts = [reordered.slice(0, 1), reordered.slice(1, 2)];
    compare_tables(&s, std::slice::from_ref(&b), &reordered_schema, &parts).unwrap();

    // A different value, a duplicated row, a missing row, a missing column, a different type.
    let (_, other) = two_columns(&[1, 2, 3], &[Some("a"), Some(""), Some("c")], true);
    assert!(compare_tables(&s, std::slice::from_ref(&b), &s, &[other]).is_err());
    let (_, dup) = two_columns(&[1, 1, 3], &[Some("a"), Some("a"), Some("c")], true);
    let (_, dup2) = two_columns(&[1, 3, 3], &[Some("a"), Some("c"), Some("c")], true);
    assert!(compare_tables(&s, std::slice::from_ref(&dup), &s, &[dup2]).is_err());
    assert!(compare_tables(&s, std::slice::from_ref(&b), &s, &[b.slice(0, 2)]).is_err());
    let one = Arc::new(s.project(&[0]).unwrap());
    assert!(compare_tables(
        &s,
        std::slice::from_ref(&b),
        &one,
        &[b.project(&[0]).unwrap()]
    )
    .is_err());
    let int32 = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int32, true),
        Field::new("name", ArrowType::Utf8, true),
    ]));
    let b32 = RecordBatch::try_new(
        int32.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            b.column(1).clone(),
        ],
    )
    .unwrap();
    assert!(compare_tables(&s, std::slice::from_ref(&b), &int32, &[b32]).is_err());
    // Empty tables of the same columns are equal.
    compare_tables(&s, &[], &s, &[]).unwrap();

    // Nested: child nullability, child metadata and list item names are ignored.
    let item = |name: &str, nullable: bool| {
        ArrowType::List(Arc::new(Field::new(name, ArrowType::Int32, nullable)))
    };
    assert_eq!(
        normalize_type(&item("element", false)),
        normalize_type(&item("item", true))
    );
    assert_ne!(
        normalize_type(&item("element", true)),
        normalize_type(&ArrowType::List(Arc::new(Field::new(
            "element",
            ArrowType::Int64,
            true
        ))))
    );
}

// ---------------------------------------------------------------------------------------------
// Tables written with delta-kernel
// ---------------------------------------------------------------------------------------------

/// Every readable version of `f` reads as expected with the reference engine.
fn check_all_versions(f: &Fixture) {
    let failures: Vec<String> = f
        .versions
        .keys()
        .filter_map(|v| f.check_version(Some(*v)).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    f.check_version(None).unwrap();
}

/// `scan_metadata` lists exactly the live files of the model, with their DVs.
fn check_listing(f: &Fixture) -> Vec<ScanFileInfo> {
    let files = scan_files(&f.url, &ReadOptions::default()).expect("scan files");
    let listed: BTreeSet<&str> = files.iter().map(|s| s.path.as_str()).collect();
    let live: BTreeSet<&str> = f.files.keys().map(|s| s.as_str()).collect();
    assert_eq!(listed, live, "{}: listed files", f.name);
    for sf in &files {
        let m = &f.files[&sf.path];
        assert_eq!(sf.has_dv, !m.deleted.is_empty(), "{}: {}", f.name, sf.path);
        let deleted: Vec<u64> = m.deleted.iter().copied().collect();
        assert_eq!(
            sf.deleted_rows.clone().unwrap_or_default(),
            deleted,
            "{}: {}",
            f.name,
            sf.path
        );
        assert_eq!(sf.num_records, Some(m.rows.num_rows() as u64));
        assert_eq!(sf.size as u64, m.size);
        assert_eq!(sf.location, f.url.join(&sf.path).unwrap());
    }
    files
}

fn ids_of(batches: &[RecordBatch]) -> Vec<i64> {
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            b.column_by_name("id")
                .unwrap()
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids
}

fn log_actions(f: &Fixture, version: u64) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(f.root.join(format!("_delta_log/{version:020}.json")))
        .expect("commit file");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("json action"))
        .collect()
}

#[test]
fn fixture_deletion_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    assert_eq!(f.latest, 3);
    check_all_versions(&f);
    let files = check_listing(&f);
    assert_eq!(files.len(), 5);
    assert!(files.iter().all(|s| s.transform.is_none()));

    // The model holds what the fixture promises.
    let groups: Vec<usize> = f.files.values().map(|m| m.row_groups).collect();
    assert_eq!(
        groups.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([1, 3, 5])
    );
    let whole = f
        .files
        .values()
        .filter(|m| m.deleted.len() == m.rows.num_rows())
        .count();
    assert_eq!(whole, 1, "one file has every row deleted");
    assert!(f
        .files
        .values()
        .any(|m| m.row_groups == 5 && (7..14).all(|r| m.deleted.contains(&r))));
    assert_eq!(f.versions[&1].num_rows(), 135);
    assert_eq!(f.versions[&2].num_rows(), 135 - 3 - 8 - 25 - 2);
    assert_eq!(f.expected().num_rows(), 135 - 4 - 8 - 25 - 2);

    // The four DVs of version 2 share one DV file, at four offsets.
    let dvs: Vec<(String, i64)> = log_actions(&f, 2)
        .iter()
        .filter_map(|a| a.get("add")?.get("deletionVector").cloned())
        .map(|dv| {
            assert_eq!(dv["storageType"], "u");
            (
                dv["pathOrInlineDv"].as_str().unwrap().to_string(),
                dv["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(dvs.len(), 4);
    assert!(dvs.iter().all(|(p, _)| *p == dvs[0].0));
    assert_eq!(
        dvs.iter().map(|(_, o)| *o).collect::<BTreeSet<_>>().len(),
        4
    );
}

fn check_column_mapping(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = column_mapping_fixture(&dir.path().join("cm"), mode);
    assert_eq!(f.latest, 4);
    check_all_versions(&f);
    let files = check_listing(&f);
    // Column mapping needs a transform for every file (physical to logical names).
    assert!(files.iter().all(|s| s.transform.is_some()));

    // The physical schema: physical names and parquet field ids on every (nested) field.
    let engine = local_engine();
    let snapshot = Snapshot::builder_for(f.url.as_str())
        .build(engine.as_ref())
        .unwrap();
    let scan = snapshot.scan_builder().build().unwrap();
    for field in scan.physical_schema().fields() {
        assert!(field.name().starts_with("col-"), "{field:?}");
        assert!(
            field
                .get_config_value(&ColumnMetadataKey::ParquetFieldId)
                .is_some(),
            "{field:?}"
        );
    }
    let logical: Vec<&str> = scan
        .logical_schema()
        .fields()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(logical, ["id", "name", "s", "extra"]);

    // The file written after ADD COLUMN: in mode id its parquet names are made up.
    let third = f
        .files
        .values()
        .find(|m| m.rows.column_by_name("extra").is_some())
        .expect("the file with extra");
    let path = f.url.join(&third.path).unwrap().to_file_path().unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).unwrap(),
    )
    .unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if mode == "id" {
        assert!(names.iter().all(|n| n.starts_with("renamed_")), "{names:?}");
    } else {
        assert!(names.iter().all(|n| n.starts_with("col-")), "{names:?}");
    }

    // Rows of the older files read `extra` as NULL.
    let read = read_table(&f.url, &ReadOptions::default()).unwrap();
    let mut nulls = 0;
    for b in &read.batches {
        let extra = b.column_by_name("extra").unwrap();
        let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert_eq!(extra.is_null(i), ids.value(i) < 200, "row {i}");
            nulls += extra.is_null(i) as usize;
        }
    }
    assert_eq!(nulls, 12 - 3 + 8);
}

#[test]
fn fixture_column_mapping_name() {
    check_column_mapping("name");
}

#[test]
fn fixture_column_mapping_id() {
    check_column_mapping("id");
}

#[test]
fn fixture_partitioned() {
    let dir = tempfile::tempdir().unwrap();
    let f = partitioned_fixture(&dir.path().join("part"));
    assert_eq!(f.latest, 3);
    check_all_versions(&f);
    let files = check_listing(&f);
    assert!(files.iter().all(|s| s.transform.is_some()));

    let pv = |s: &[(&str, &str)]| -> HashMap<String, String> {
        s.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let by_first_id = |first: i64| {
        let (path, _) = f
            .files
            .iter()
            .find(|(_, m)| {
                m.rows
                    .column_by_name("id")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .value(0)
                    == first
            })
            .unwrap();
        files.iter().find(|s| &s.path == path).unwrap()
    };
    // Serialized partition values; NULL (and the empty string) are absent from the map.
    assert_eq!(
        by_first_id(0).partition_values,
        pv(&[
            ("p_str", "a"),
            ("p_int", "1"),
            ("p_date", "2024-01-01"),
            ("p_ts", "2024-01-01T12:34:56.789012Z"),
            ("p_ntz", "2024-01-01 00:00:00.000000"),
        ])
    );
    assert_eq!(by_first_id(300).partition_values, pv(&[("p_str", "a")]));
    assert!(!by_first_id(400).partition_values.contains_key("p_str"));
    assert!(!by_first_id(200).partition_values.contains_key("p_str"));
    // Hive-style directories, escaped once on disk and once more in add.path.
    let special = by_first_id(100);
    let on_disk = special.location.to_file_path().unwrap();
    assert!(
        on_disk
            .to_str()
            .unwrap()
            .contains("/p_str=b b%2F%3D%25%3Ax%23é/"),
        "{on_disk:?}"
    );
    assert!(on_disk.is_file());
    assert!(special
        .path
        .starts_with("p_str=b%20b%252F%253D%2525%253Ax%2523%C3%A9/"));

    // A projection of partition and data columns.
    let cols = vec!["p_ts".to_string(), "id".to_string()];
    let read = read_table(
        &f.url,
        &ReadOptions {
            columns: Some(cols.clone()),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let exp = f.expected();
    let idx: Vec<usize> = cols
        .iter()
        .map(|c| exp.schema.index_of(c).unwrap())
        .collect();
    let exp_schema = exp.schema.project(&idx).unwrap();
    let exp_batches: Vec<RecordBatch> = exp
        .batches
        .iter()
        .map(|b| b.project(&idx).unwrap())
        .collect();
    compare_tables(&exp_schema, &exp_batches, &read.schema, &read.batches).unwrap();
    assert_eq!(read.schema.fields().len(), 2);
}

#[test]
fn fixture_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let f = checkpoint_fixture(&dir.path().join("cp"));
    assert_eq!(f.latest, 6);
    assert_eq!(f.versions.keys().copied().collect::<Vec<_>>(), [4, 5, 6]);
    check_all_versions(&f);
    check_listing(&f);
    for v in 0..4 {
        assert!(
            read_table(&f.url, &ReadOptions::at_version(v)).is_err(),
            "version {v} has no commit any more"
        );
    }
    assert!(!f.root.join("_delta_log/00000000000000000000.json").exists());

    // The log is read through the checkpoint parquet, by the parquet handler, with a predicate.
    let engine = Arc::new(RecordingEngine::new(local_engine()));
    f.check_version_with(engine.clone(), None).unwrap();
    let calls = engine.calls();
    let checkpoint_reads: Vec<&ParquetCall> = calls
        .iter()
        .filter(|c| {
            matches!(c, ParquetCall::Read { files, .. }
                if files.iter().any(|p| p.ends_with("00000000000000000004.checkpoint.parquet")))
        })
        .collect();
    assert!(!checkpoint_reads.is_empty(), "{calls:#?}");
    assert!(
        checkpoint_reads.iter().any(|c| matches!(
            c,
            ParquetCall::Read {
                predicate: Some(_),
                ..
            }
        )),
        "{calls:#?}"
    );
    for c in &calls {
        if std::env::var_os("RAYQUET_PRINT_CALLS").is_some() {
            println!("{c:?}");
        }
        if let ParquetCall::Read {
            files, predicate, ..
        } = c
        {
            if files.iter().any(|p| p.contains("part-")) {
                assert_eq!(files.len(), 1, "execute reads one data file per call");
                assert!(predicate.is_none(), "execute pushes no predicate");
            }
        }
    }
}

#[test]
fn fixture_time_travel() {
    let dir = tempfile::tempdir().unwrap();
    let f = time_travel_fixture(&dir.path().join("tt"));
    assert_eq!(f.latest, 8);
    let rows: Vec<usize> = (0..=8).map(|v| f.versions[&v].num_rows()).collect();
    assert_eq!(rows, [0, 20, 30, 30, 25, 15, 20, 20, 26]);
    check_all_versions(&f);
    check_listing(&f);
    // v3 removed A and added D in one commit.
    let actions = log_actions(&f, 3);
    assert_eq!(
        actions.iter().filter(|a| a.get("remove").is_some()).count(),
        1
    );
    assert_eq!(actions.iter().filter(|a| a.get("add").is_some()).count(), 1);
    let v2 = read_table(&f.url, &ReadOptions::at_version(2)).unwrap();
    assert_eq!(
        ids_of(&v2.batches),
        (0..10).chain(100..110).chain(200..210).collect::<Vec<_>>()
    );
    // Before ADD COLUMN the schema has no `extra`.
    assert!(read_table(&f.url, &ReadOptions::at_version(6))
        .unwrap()
        .schema
        .field_with_name("extra")
        .is_err());
}

#[test]
fn fixture_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let f = row_groups_fixture(&dir.path().join("rg"));
    check_all_versions(&f);
    check_listing(&f);
    let mut groups: Vec<(usize, usize)> = f
        .files
        .values()
        .map(|m| (m.rows.num_rows(), m.row_groups))
        .collect();
    groups.sort_unstable();
    assert_eq!(groups, [(0, 0), (100, 1), (1000, 143)]);
    assert_eq!(f.expected().num_rows(), 1100 - 39);
    assert_eq!(f.expected().schema.fields().len(), 12);
}

#[test]
fn fixture_bench_table() {
    let dir = tempfile::tempdir().unwrap();
    let spec = BenchSpec {
        files: 6,
        target_file_bytes: 128 << 10,
        rows_per_group: Some(500),
        files_per_commit: 4,
        seed: 7,
    };
    let t = bench_table(&dir.path().join("bench"), &spec);
    assert_eq!(t.version, 2, "two commits of 4 + 2 files");
    assert_eq!(t.rows, (t.rows_per_file * 6) as u64);
    assert_eq!(t.row_groups_per_file, t.rows_per_file.div_ceil(500));
    let files = scan_files(&t.url, &ReadOptions::default()).unwrap();
    assert_eq!(files.len(), 6);
    for sf in &files {
        let ratio = sf.size as f64 / spec.target_file_bytes as f64;
        assert!(
            (0.7..1.3).contains(&ratio),
            "file size {} vs target",
            sf.size
        );
    }
    assert_eq!(files.iter().map(|f| f.size as u64).sum::<u64>(), t.bytes);
    let read = read_table(&t.url, &ReadOptions::default()).unwrap();
    assert_eq!(
        ids_of(&read.batches),
        (0..t.rows as i64).collect::<Vec<_>>()
    );

    let many = BenchSpec::many_files();
    assert_eq!((many.files, many.target_file_bytes), (100, 1 << 20));
    let large = BenchSpec::large_row_groups();
    assert_eq!(large.files, 8);
    assert!(large.rows_per_group.is_none());
}

#[test]
fn scan_predicate_skips_files_not_rows() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let pred = Arc::new(Predicate::gt(
        Expression::column(["id"]),
        Expression::literal(405i64),
    ));
    let opts = ReadOptions {
        predicate: Some(pred),
        ..ReadOptions::default()
    };
    // Stats: only the file of ids 400..420 can hold id > 405.
    let files = scan_files(&f.url, &opts).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].deleted_rows, Some(vec![0, 19]));
    // Scan::execute does not filter rows: ids 401..=405 come back too.
    let read = read_table(&f.url, &opts).unwrap();
    assert_eq!(ids_of(&read.batches), (401..419).collect::<Vec<_>>());
}

#[test]
fn metadata_columns_row_index_and_file() {
    // Row indexes are positions in the file, counted across row groups and DVs; `_file` is the
    // file URL. Expected from the model: every non-deleted position of every live file.
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let opts = ReadOptions {
        columns: Some(vec!["id".to_string()]),
        metadata_columns: vec![
            (
                "_metadata.row_index".to_string(),
                MetadataColumnSpec::RowIndex,
            ),
            ("_file".to_string(), MetadataColumnSpec::FilePath),
        ],
        ..ReadOptions::default()
    };
    let read = read_table(&f.url, &opts).unwrap();
    let names: Vec<&str> = read
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["id", "_metadata.row_index", "_file"]);
    let mut got: Vec<(String, i64, i64)> = Vec::new();
    for b in &read.batches {
        let ids = b.column(0).as_primitive::<Int64Type>();
        let rows = b.column(1).as_primitive::<Int64Type>();
        let files = b.column(2).as_string::<i32>();
        for i in 0..b.num_rows() {
            got.push((files.value(i).to_string(), rows.value(i), ids.value(i)));
        }
    }
    got.sort();
    let mut want: Vec<(String, i64, i64)> = Vec::new();
    for (path, m) in &f.files {
        let ids = m
            .rows
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let url = f.url.join(path).unwrap().to_string();
        for r in 0..m.rows.num_rows() {
            if !m.deleted.contains(&(r as u64)) {
                want.push((url.clone(), r as i64, ids.value(r)));
            }
        }
    }
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn engine_on_a_caller_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(row_groups_fixture(&dir.path().join("rg")));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let inner: Arc<dyn Engine> = Arc::new(engine_on_runtime(local_store(), rt.handle().clone()));
    let engine = Arc::new(RecordingEngine::new(inner));

    // From a plain thread.
    f.check_version_with(engine.clone(), None).unwrap();
    let reads: Vec<_> = engine
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            ParquetCall::Read {
                files,
                sizes,
                predicate,
                ..
            } => Some((files, sizes, predicate)),
            _ => None,
        })
        .collect();
    // No checkpoint: the only parquet reads are the three data files, one per call, with the
    // add's size and no predicate.
    assert_eq!(reads.len(), 3, "{reads:?}");
    for (files, sizes, predicate) in &reads {
        assert_eq!(files.len(), 1);
        let path = files[0].strip_prefix(f.url.as_str()).unwrap();
        assert_eq!(sizes[0], f.files[path].size);
        assert!(predicate.is_none());
    }

    // From a blocking task of that same runtime (the executor then uses block_in_place).
    engine.clear();
    let (f2, e2) = (f.clone(), engine.clone());
    rt.block_on(async move {
        tokio::task::spawn_blocking(move || f2.check_version_with(e2, None))
            .await
            .unwrap()
    })
    .unwrap();
    assert_eq!(engine.calls().len(), 3);
}

/// Writes the two default bench tables (100 files of about 1 MiB; 8 files of one large row
/// group each) under `$RAYQUET_DELTA_BENCH_DIR` (default: a `rayquet-delta-bench` temp dir),
/// replacing earlier ones:
/// `cargo test --release -p rayquet-delta --test delta -- --ignored --nocapture write_bench_tables`.
#[test]
#[ignore = "writes about 350 MB; run by hand for benchmarks"]
fn write_bench_tables() {
    let root = std::env::var_os("RAYQUET_DELTA_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("rayquet-delta-bench"));
    for (name, spec) in [
        ("many-files", BenchSpec::many_files()),
        ("large-row-groups", BenchSpec::large_row_groups()),
    ] {
        let dir = root.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let start = std::time::Instant::now();
        let t = bench_table(&dir, &spec);
        println!(
            "{name}: {} files x {} rows ({} row groups each), {} bytes, at {} ({:?})",
            t.files,
            t.rows_per_file,
            t.row_groups_per_file,
            t.bytes,
            t.url,
            start.elapsed()
        );
        let files = scan_files(&t.url, &ReadOptions::default()).unwrap();
        assert_eq!(files.len(), spec.files);
        for f in &files {
            let ratio = f.size as f64 / spec.target_file_bytes as f64;
            assert!(
                (0.8..1.2).contains(&ratio),
                "{name}: file of {} bytes",
                f.size
            );
        }
    }
}
