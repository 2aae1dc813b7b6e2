//! Iceberg format v3 (deletion vectors, row lineage, initial defaults, nanosecond timestamps,
//! `unknown`, `variant`, `geometry`) and the format v1 table after partition evolution, on the
//! tables of `rayquet_testkit::iceberg_v3` (iceberg-rust 0.10.1 can neither write nor read
//! them as they are).
//!
//! Every answer is checked against the rows the fixture wrote minus the deletes it chose,
//! computed here from what it recorded (`Fixture::data_files`, `delete_files`, `expected`),
//! never from reading the files back.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit};
use futures::StreamExt;
use iceberg::TableIdent;
use rayquet::{col, ErrorKind, ScanBuilder, ScanOptions};
use rayquet_iceberg::{load_table, scan_tasks, ScanPlan, TableScan, TaskUnit};
use rayquet_testkit::iceberg_tables::*;
use rayquet_testkit::iceberg_v3::*;

fn table(fx: &Fixture) -> iceberg::table::Table {
    load_table(&fx.table_location, &ScanOptions::new()).expect("load_table")
}

fn read(scan: TableScan) -> rayquet::Result<(SchemaRef, Vec<RecordBatch>)> {
    let reader = scan.build()?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(rayquet::Error::from)?;
    Ok((schema, flat(&batches)))
}

fn rows(scan: TableScan) -> Vec<String> {
    let (_, b) = read(scan).unwrap_or_else(|e| panic!("rayquet: {e}"));
    sorted_rows(&b)
}

/// Run-end encoded columns (`_file`) as plain strings.
fn flat(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    batches
        .iter()
        .map(|b| {
            let (fields, cols): (Vec<_>, Vec<_>) = b
                .schema()
                .fields()
                .iter()
                .zip(b.columns())
                .map(|(f, c)| match f.data_type() {
                    DataType::RunEndEncoded(_, v) => (
                        Arc::new(f.as_ref().clone().with_data_type(v.data_type().clone())),
                        cast(c, v.data_type()).unwrap(),
                    ),
                    _ => (Arc::clone(f), Arc::clone(c)),
                })
                .unzip();
            RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
        })
        .collect()
}

/// The error of a scan (at build or while reading).
fn error(scan: TableScan) -> rayquet::Error {
    match read(scan) {
        Ok((_, b)) => panic!("expected an error, got {} batches", b.len()),
        Err(e) => e,
    }
}

/// The rows planned, shipped through JSON and read elsewhere (the distributed path), and
/// the units.
fn shipped(scan: TableScan) -> (Vec<String>, Vec<TaskUnit>) {
    let planned = scan.plan().expect("plan");
    let plan: ScanPlan =
        serde_json::from_str(&serde_json::to_string(&planned.plan).unwrap()).unwrap();
    let units: Vec<TaskUnit> = futures::executor::block_on(planned.units.collect::<Vec<_>>())
        .into_iter()
        .map(|u| {
            let json = serde_json::to_string(&u.expect("unit")).unwrap();
            serde_json::from_str(&json).unwrap()
        })
        .collect();
    let stream = futures::stream::iter(units.clone().into_iter().map(Ok));
    let reader = plan
        .scan(stream, ScanOptions::new().batch_size(7))
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(|b| b.expect("batch")).collect();
    (sorted_rows(&flat(&batches)), units)
}

// ---------------------------------------------------------------------------------------------
// Deletion vectors and row lineage
// ---------------------------------------------------------------------------------------------

/// The positions of `data` deleted as of `snapshot` per the spec: its deletion vector if one
/// applies (it replaces position-delete files), else its position deletes.
fn deleted(fx: &Fixture, data: &WrittenFile, snapshot_seq: i64) -> BTreeSet<i64> {
    let applies = |d: &&WrittenDelete| {
        d.sequence_number <= snapshot_seq
            && d.sequence_number >= data.sequence_number
            && d.referenced_data_file.as_deref() == Some(data.path.as_str())
    };
    let all: Vec<&WrittenDelete> = fx.delete_files.iter().filter(applies).collect();
    let vectors: Vec<&&WrittenDelete> = all
        .iter()
        .filter(|d| matches!(d.kind, DeleteKind::Vector { .. }))
        .collect();
    let chosen: Vec<&WrittenDelete> = if vectors.is_empty() {
        all.clone()
    } else {
        vectors.into_iter().copied().collect()
    };
    chosen
        .iter()
        .flat_map(|d| {
            let pos = d.rows.column(1).as_primitive::<Int64Type>();
            pos.values().to_vec()
        })
        .collect()
}

/// The spec's rows of `fx` at the snapshot with sequence number `seq`: `id, s, _pos, _row_id,
/// _last_updated_sequence_number`, computed from the rows written.
fn expected_lineage(fx: &Fixture, seq: i64) -> Vec<String> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("_pos", DataType::Int64, false),
        Field::new("_row_id", DataType::Int64, true),
        Field::new("_last_updated_sequence_number", DataType::Int64, true),
    ]));
    let mut batches = Vec::new();
    for f in fx.data_files.iter().filter(|f| f.sequence_number <= seq) {
        let gone = deleted(fx, f, seq);
        let r = &f.rows;
        let n = r.num_rows();
        let stored = |name: &str| {
            r.column_by_name(name)
                .map(|c| c.as_primitive::<Int64Type>().clone())
        };
        let (row_ids, seqs) = (stored("_row_id"), stored("_last_updated_sequence_number"));
        let keep: Vec<usize> = (0..n).filter(|i| !gone.contains(&(*i as i64))).collect();
        let ids = r.column_by_name("id").unwrap().as_primitive::<Int64Type>();
        let s = r.column_by_name("s").unwrap().as_string::<i32>();
        let take_row_id = |i: usize| match &row_ids {
            Some(c) if c.is_valid(i) => Some(c.value(i)),
            _ => f.first_row_id.map(|first| first + i as i64),
        };
        let take_seq = |i: usize| match &seqs {
            Some(c) if c.is_valid(i) => Some(c.value(i)),
            _ => Some(f.sequence_number),
        };
        batches.push(
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int64Array::from_iter_values(
                        keep.iter().map(|&i| ids.value(i)),
                    )),
                    Arc::new(StringArray::from_iter(
                        keep.iter().map(|&i| s.is_valid(i).then(|| s.value(i))),
                    )),
                    Arc::new(Int64Array::from_iter_values(keep.iter().map(|&i| i as i64))),
                    Arc::new(Int64Array::from_iter(keep.iter().map(|&i| take_row_id(i)))),
                    Arc::new(Int64Array::from_iter(keep.iter().map(|&i| take_seq(i)))),
                ],
            )
            .unwrap(),
        );
    }
    sorted_rows(&batches)
}

fn only(rows: &[String], n: usize) -> Vec<String> {
    let mut out: Vec<String> = rows
        .iter()
        .map(|r| r.split('|').take(n).collect::<Vec<_>>().join("|"))
        .collect();
    out.sort();
    out
}

const LINEAGE: [&str; 5] = [
    "id",
    "s",
    "_pos",
    "_row_id",
    "_last_updated_sequence_number",
];

#[test]
fn deletion_vectors_and_row_lineage_follow_the_spec() {
    let fx = v3_deletes(40, Damage::None);
    let t = table(&fx);
    assert_eq!(fx.snapshot_ids.len(), 3);
    let (s1, s2, s3) = (fx.snapshot_ids[0], fx.snapshot_ids[1], fx.snapshot_ids[2]);
    // Every snapshot: the rows written minus the deletes that apply (vectors replace the
    // position deletes of their data file: D1's vector holds P1's positions and one more).
    for (snap, seq) in [(s1, 1), (s2, 2), (s3, 3)] {
        let want = expected_lineage(&fx, seq);
        let got = rows(
            TableScan::from_table(t.clone())
                .snapshot_id(snap)
                .columns(["id", "s"]),
        );
        assert_eq!(got, only(&want, 2), "snapshot {seq}: rows");
        let got = rows(
            TableScan::from_table(t.clone())
                .snapshot_id(snap)
                .columns(LINEAGE),
        );
        assert_eq!(got, want, "snapshot {seq}: row lineage");
    }
    // 3 data files of 40 rows, minus 2 (P2 on D2), minus vectors 2 (D0) + 3 (D1) + 1 (D3),
    // plus 3 files in S3.
    assert_eq!(
        rows(TableScan::from_table(t.clone())).len(),
        6 * 40 - 2 - 2 - 3 - 1
    );
    // The output schema: lineage columns are nullable Int64 with their reserved field ids.
    let schema = TableScan::from_table(t.clone())
        .columns(LINEAGE)
        .output_schema()
        .unwrap();
    assert_eq!(
        schema.field(3).metadata()["PARQUET:field_id"],
        (i32::MAX - 107).to_string()
    );
    assert!(schema.field(4).is_nullable());
    // Distributed: units carry the vector (Puffin file, offset, length) and lineage.
    let (got, units) = shipped(TableScan::from_table(t.clone()).columns(LINEAGE));
    assert_eq!(got, expected_lineage(&fx, 3));
    let vectors: Vec<_> = units
        .iter()
        .filter_map(|u| u.deletion_vector.clone())
        .collect();
    assert_eq!(vectors.len(), 3, "D0, D1, D3 have vectors");
    let puffins: BTreeSet<_> = vectors.iter().map(|v| v.path.clone()).collect();
    assert_eq!(puffins.len(), 1, "several vectors share one Puffin file");
    for u in &units {
        assert!(
            u.positions.iter().all(|p| !p.ends_with(".puffin")),
            "a Puffin file is never read as position deletes: {u:?}"
        );
        if u.deletion_vector.is_some() {
            assert!(u.positions.is_empty(), "a vector replaces position deletes");
        }
        let written = fx.data_file(&u.path);
        assert_eq!(u.first_row_id, written.first_row_id, "{}", u.path);
        assert_eq!(u.sequence_number, Some(written.sequence_number));
    }
    let recorded: Vec<_> = fx
        .delete_files
        .iter()
        .filter_map(|d| match d.kind {
            DeleteKind::Vector { offset, length } => Some((offset, length)),
            _ => None,
        })
        .collect();
    for v in &vectors {
        assert!(recorded.contains(&(v.offset, v.length)), "{v:?}");
    }
    // Filters still prune and filter; lineage with a filter on another column.
    let got = rows(
        TableScan::from_table(t.clone())
            .columns(LINEAGE)
            .filter(col("id").lt(40)),
    );
    let want: Vec<String> = expected_lineage(&fx, 3)
        .into_iter()
        .filter(|r| r.split('|').next().unwrap().parse::<i64>().unwrap() < 40)
        .collect();
    assert_eq!(got, want);
}

#[test]
fn row_lineage_is_refused_outside_v3_and_in_filters() {
    let fx = primitives(1, 10, 10);
    let t = table(&fx);
    let e = error(TableScan::from_table(t).columns(["id", "_row_id"]));
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("format v3"), "{e}");
    let fx = v3_deletes(10, Damage::None);
    let e = error(
        TableScan::from_table(table(&fx))
            .columns(["id"])
            .filter(col("_row_id").lt(3)),
    );
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}

/// A damaged vector fails the scan with `CorruptTable` naming its Puffin file.
fn assert_corrupt(fx: &Fixture, what: &str) {
    let puffin = fx
        .delete_files
        .iter()
        .find(|d| matches!(d.kind, DeleteKind::Vector { .. }))
        .unwrap()
        .path
        .clone();
    let name = puffin.rsplit('/').next().unwrap().to_string();
    let e = error(TableScan::from_table(table(fx)).columns(["id"]));
    assert_eq!(e.kind(), ErrorKind::CorruptTable, "{what}: {e}");
    assert!(e.to_string().contains(&name), "{what}: {e}");
}

#[test]
fn damaged_deletion_vectors_are_corrupt_table() {
    for (damage, what) in [
        (Damage::Cardinality, "positions"),
        (Damage::OutOfFile, "outside the file"),
        (Damage::PastEnd, "past"),
    ] {
        let fx = v3_deletes(10, damage);
        assert_corrupt(&fx, what);
    }
    // Bytes damaged on disk: the length prefix, the magic, the vector (CRC).
    for (at, what) in [(0, "length"), (5, "magic"), (14, "CRC")] {
        let fx = v3_deletes(10, Damage::None);
        let d = fx
            .delete_files
            .iter()
            .find(|d| matches!(d.kind, DeleteKind::Vector { .. }))
            .unwrap();
        let DeleteKind::Vector { offset, .. } = d.kind else {
            unreachable!()
        };
        let mut bytes = std::fs::read(&d.local_path).unwrap();
        bytes[offset as usize + at] ^= 0x20;
        std::fs::write(&d.local_path, bytes).unwrap();
        assert_corrupt(&fx, what);
    }
}

#[test]
fn deletion_vectors_in_caller_planned_tasks_are_refused() {
    // iceberg-rust attaches the Puffin file as a position-delete file, without its offset.
    let fx = v3_deletes(10, Damage::None);
    let tasks = plan_tasks(&fx.table, None, Some(&["id"]), None, true);
    assert!(tasks
        .iter()
        .any(|t| t.deletes.iter().any(|d| d.file_path.ends_with(".puffin"))));
    let scan = scan_tasks(tasks, Some(&fx.table)).unwrap();
    let e = scan
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .map_err(rayquet::Error::from)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("Puffin"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// v3 types, defaults
// ---------------------------------------------------------------------------------------------

#[test]
fn v3_types_defaults_and_nanosecond_timestamps() {
    let fx = v3_types(12);
    // iceberg-rust alone cannot open the table.
    let plain = futures::executor::block_on(async {
        let _g = rayquet_testkit::iceberg_tables::runtime().enter();
        iceberg::table::StaticTable::from_metadata_file(
            &fx.metadata_location,
            TableIdent::from_strs(["ns", "t"]).unwrap(),
            iceberg::io::FileIO::new_with_fs(),
        )
        .await
    });
    assert!(
        plain.is_err(),
        "iceberg-rust 0.10.1 refuses variant/unknown"
    );
    let t = table(&fx);
    let all = fx.expected_current();
    let cols: Vec<&str> = all
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| *n != "v" && *n != "g")
        .collect();
    let (schema, batches) = read(TableScan::from_table(t.clone()).columns(cols.clone())).unwrap();
    let want = sorted_rows(&[project(&all, &cols)]);
    assert_eq!(sorted_rows(&batches), want);
    // Types: unknown is Null (nested too), nanosecond timestamps keep nanoseconds.
    let ty = |n: &str| schema.field_with_name(n).unwrap().data_type().clone();
    assert_eq!(ty("u"), DataType::Null);
    let DataType::Struct(st) = ty("st") else {
        panic!("st")
    };
    assert_eq!(st[1].data_type(), &DataType::Null);
    assert_eq!(ty("ts_ns"), DataType::Timestamp(TimeUnit::Nanosecond, None));
    assert_eq!(
        ty("tstz_ns"),
        DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into()))
    );
    assert_eq!(
        ty("d_tsns"),
        DataType::Timestamp(TimeUnit::Nanosecond, None)
    );
    // Filters see the initial default of files that lack the column.
    let n = rows(
        TableScan::from_table(t.clone())
            .columns(["id"])
            .filter(col("d_int").eq(7)),
    );
    assert_eq!(n.len(), 12, "F1's rows read d_int = 7");
    // geometry: refused when read (selected, or by a filter), naming the column and a data
    // file; other columns read.
    let e = error(TableScan::from_table(t.clone()).columns(["id", "g"]));
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("geometry") && msg.contains("\"g\""), "{msg}");
    assert!(msg.contains(".parquet"), "names the data file: {msg}");
    // variant: read (as Arrow's variant struct; these files lack the column: nulls); filters
    // on it are refused.
    let (schema, batches) = read(TableScan::from_table(t.clone()).columns(["id", "v"])).unwrap();
    assert_eq!(
        schema.field(1).data_type(),
        &rayquet_iceberg::variant_type()
    );
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 24);
    assert!(batches
        .iter()
        .all(|b| b.column(1).null_count() == b.num_rows()));
    for c in ["v", "g"] {
        let e = error(
            TableScan::from_table(t.clone())
                .columns(["id"])
                .filter(col(c).is_null()),
        );
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    }
    let e = error(TableScan::from_table(t.clone()));
    assert_eq!(
        e.kind(),
        ErrorKind::Unsupported,
        "all columns include v: {e}"
    );
}

#[test]
fn v1_table_after_partition_evolution() {
    let fx = v1_void_partition();
    // iceberg-rust alone refuses the void field named like its column (in the table
    // metadata or, when planning, in the manifests).
    let plain = futures::executor::block_on(async {
        let _g = rayquet_testkit::iceberg_tables::runtime().enter();
        iceberg::table::StaticTable::from_metadata_file(
            &fx.metadata_location,
            TableIdent::from_strs(["ns", "t"]).unwrap(),
            iceberg::io::FileIO::new_with_fs(),
        )
        .await
    });
    let e = match plain {
        Err(e) => e,
        Ok(t) => try_plan_tasks(&t.into_table(), None, None, None, true)
            .expect_err("iceberg-rust refuses it"),
    };
    assert!(e.to_string().contains("conflicts with schema field"), "{e}");
    let t = table(&fx);
    assert_eq!(
        rows(TableScan::from_table(t.clone())),
        sorted_rows(&[fx.expected_current()])
    );
    // The void field gives no constant: spec 1's file keeps its own `cat` values.
    assert_eq!(
        rows(TableScan::from_table(t.clone()).filter(col("cat").eq("c"))),
        vec!["10|c".to_string()]
    );
    assert_eq!(
        rows(TableScan::from_table(t.clone()).filter(col("cat").eq("a"))).len(),
        3
    );
    let old: HashMap<_, _> = fx
        .data_files
        .iter()
        .map(|f| (f.path.clone(), f.snapshot_id))
        .collect();
    assert_eq!(old.len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Each Puffin file read once per scan
// ---------------------------------------------------------------------------------------------

mod counting {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    use async_trait::async_trait;
    use futures::stream::BoxStream;
    use object_store::path::Path;
    use object_store::*;

    /// A store that counts the GET requests of `.puffin` objects.
    #[derive(Debug)]
    pub struct Counting {
        pub inner: Arc<dyn ObjectStore>,
        pub puffin_gets: AtomicU64,
    }

    impl std::fmt::Display for Counting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Counting({})", self.inner)
        }
    }

    #[async_trait]
    impl ObjectStore for Counting {
        async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
            self.inner.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(
            &self,
            l: &Path,
            o: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(l, o).await
        }
        async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
            if location.as_ref().ends_with(".puffin") && !options.head {
                self.puffin_gets.fetch_add(1, Relaxed);
            }
            self.inner.get_opts(location, options).await
        }
        async fn get_ranges(
            &self,
            location: &Path,
            ranges: &[std::ops::Range<u64>],
        ) -> Result<Vec<bytes::Bytes>> {
            if location.as_ref().ends_with(".puffin") {
                self.puffin_gets.fetch_add(ranges.len() as u64, Relaxed);
            }
            self.inner.get_ranges(location, ranges).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(locations)
        }
        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.inner.list(prefix)
        }
        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }
        async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, o).await
        }
    }
}

#[test]
fn each_puffin_file_is_read_once_per_scan() {
    let fx = v3_deletes(40, Damage::None);
    let store = Arc::new(counting::Counting {
        inner: Arc::new(object_store::local::LocalFileSystem::new()),
        puffin_gets: Default::default(),
    });
    let options = ScanOptions::new().object_store("file://", store.clone());
    let t = load_table(&fx.table_location, &options).expect("load_table");
    for round in 1..=2 {
        let got = rows(
            TableScan::from_table(t.clone())
                .with_options(options.clone())
                .columns(["id", "s"]),
        );
        assert_eq!(got, only(&expected_lineage(&fx, 3), 2));
        // Three vectors of one Puffin file: one coalesced read per scan.
        assert_eq!(
            store.puffin_gets.load(std::sync::atomic::Ordering::Relaxed),
            round,
            "Puffin reads after {round} scans"
        );
    }
    // A filtered scan (data files may be pruned) registers vectors as its tasks are made:
    // never a blob read twice.
    let got = rows(
        TableScan::from_table(t.clone())
            .with_options(options.clone())
            .columns(["id", "s"])
            .filter(col("id").gt_eq(0)),
    );
    assert_eq!(got, only(&expected_lineage(&fx, 3), 2));
    let reads = store.puffin_gets.load(std::sync::atomic::Ordering::Relaxed) - 2;
    assert!(
        (1..=3).contains(&reads),
        "{reads} Puffin reads for 3 vectors"
    );
}

// ---------------------------------------------------------------------------------------------
// variant
// ---------------------------------------------------------------------------------------------

/// Whether `f` is tagged with Arrow's Parquet variant extension type.
fn is_variant(f: &Field) -> bool {
    f.extension_type_name() == Some("arrow.parquet.variant")
}

/// `col` (of field `f`) with its variants (at any depth of structs and lists) as their JSON
/// text, as
/// parquet-variant-compute's `variant_to_json` renders them, re-serialised by serde_json (the
/// fixture's form); nulls stay null.
fn variant_json(f: &Field, col: &arrow::array::ArrayRef) -> (Field, arrow::array::ArrayRef) {
    if is_variant(f) {
        let text = parquet::variant::variant_to_json(col).expect("variant_to_json");
        let normal: StringArray = text
            .iter()
            .map(|t| {
                t.map(|t| {
                    serde_json::from_str::<serde_json::Value>(t)
                        .unwrap()
                        .to_string()
                })
            })
            .collect();
        return (Field::new(f.name(), DataType::Utf8, true), Arc::new(normal));
    }
    if let DataType::Struct(fields) = f.data_type() {
        let s = col.as_struct();
        let (fs, cs): (Vec<Field>, Vec<_>) = fields
            .iter()
            .zip(s.columns())
            .map(|(f, c)| variant_json(f, c))
            .unzip();
        let s = arrow::array::StructArray::try_new(fs.into(), cs, s.nulls().cloned()).unwrap();
        return (
            Field::new(f.name(), s.data_type().clone(), true),
            Arc::new(s),
        );
    }
    if let DataType::List(e) = f.data_type() {
        let l = col.as_list::<i32>();
        let (ef, values) = variant_json(e, l.values());
        let l = arrow::array::ListArray::try_new(
            Arc::new(ef),
            l.offsets().clone(),
            values,
            l.nulls().cloned(),
        )
        .unwrap();
        return (
            Field::new(f.name(), l.data_type().clone(), true),
            Arc::new(l),
        );
    }
    (f.clone(), Arc::clone(col))
}

/// Batches with their variants as JSON text (see [`variant_json`]).
fn as_json(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    batches
        .iter()
        .map(|b| {
            let (fs, cs): (Vec<Field>, Vec<_>) = b
                .schema()
                .fields()
                .iter()
                .zip(b.columns())
                .map(|(f, c)| variant_json(f, c))
                .unzip();
            RecordBatch::try_new(Arc::new(Schema::new(fs)), cs).unwrap()
        })
        .collect()
}

/// The variant at `row` of `col` as its `metadata` and `value` bytes (`None`: SQL NULL).
fn variant_bytes(col: &dyn Array, row: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    if col.is_null(row) {
        return None;
    }
    let s = col.as_struct();
    let bytes = |name: &str| {
        let c = cast(s.column_by_name(name).unwrap(), &DataType::Binary).unwrap();
        c.as_binary::<i32>().value(row).to_vec()
    };
    Some((bytes("metadata"), bytes("value")))
}

/// Parquet's own reader of a data file (its Arrow reader, whole file), with its variant
/// columns unshredded by parquet-variant-compute when the file shreds them: `v` and `st.w` per
/// row.
#[allow(clippy::type_complexity)]
fn parquet_reference(
    path: &std::path::Path,
) -> Vec<(Option<(Vec<u8>, Vec<u8>)>, Option<(Vec<u8>, Vec<u8>)>)> {
    use parquet::variant::{unshred_variant, VariantArray};
    let unshredded = |c: &arrow::array::ArrayRef| -> arrow::array::ArrayRef {
        let v = VariantArray::try_new(c.as_ref()).unwrap();
        Arc::new(unshred_variant(&v).unwrap().into_inner())
    };
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        assert!(is_variant(b.schema().field_with_name("v").unwrap()));
        let v = unshredded(b.column_by_name("v").unwrap());
        let st = b.column_by_name("st").unwrap().as_struct();
        let w = unshredded(st.column_by_name("w").unwrap());
        for r in 0..b.num_rows() {
            let w = if st.is_null(r) {
                None
            } else {
                variant_bytes(w.as_ref(), r)
            };
            out.push((variant_bytes(v.as_ref(), r), w));
        }
    }
    out
}

#[test]
fn variant_columns_read_as_arrow_variants() {
    let fx = v3_variant(16);
    // F1 stores the variants unshredded, F2 shredded (`typed_value` groups).
    let shredded = |f: &WrittenFile| {
        let file = std::fs::File::open(&f.local_path).unwrap();
        let r = parquet::file::reader::SerializedFileReader::new(file).unwrap();
        let md = parquet::file::reader::FileReader::metadata(&r);
        let paths: Vec<String> = md
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.path().string())
            .collect();
        (
            paths.iter().any(|p| p.starts_with("v.typed_value")),
            paths.iter().any(|p| p.starts_with("st.w.typed_value")),
            paths.iter().any(|p| p.contains(".element.typed_value")),
        )
    };
    assert_eq!(shredded(&fx.data_files[0]), (false, false, false));
    assert_eq!(shredded(&fx.data_files[1]), (true, true, true));
    let t = table(&fx);
    let want = sorted_rows(&[fx.expected_current()]);
    // The whole table: F1 unshredded, F2 shredded (unshredded by the reader), one DV.
    let (schema, batches) = read(TableScan::from_table(t.clone())).unwrap();
    assert_eq!(sorted_rows(&as_json(&batches)), want);
    // The type: Arrow's variant extension over struct<metadata, value>, nested too, with the
    // field ids of the table.
    let v = schema.field_with_name("v").unwrap();
    assert!(is_variant(v), "{v:?}");
    assert_eq!(v.data_type(), &rayquet_iceberg::variant_type());
    assert!(v.is_nullable());
    assert_eq!(
        v.metadata().get("PARQUET:field_id"),
        Some(&fx.field_id("v").to_string())
    );
    let DataType::Struct(st) = schema.field_with_name("st").unwrap().data_type() else {
        panic!("st is a struct")
    };
    assert!(is_variant(&st[1]));
    assert_eq!(st[1].data_type(), &rayquet_iceberg::variant_type());
    let DataType::List(e) = schema.field_with_name("vl").unwrap().data_type() else {
        panic!("vl is a list")
    };
    assert!(is_variant(e));
    assert_eq!(
        e.metadata().get("PARQUET:field_id"),
        Some(&fx.field_id("vl.element").to_string())
    );
    let output = TableScan::from_table(t.clone()).output_schema().unwrap();
    assert_eq!(output, schema);
    // Batches have that schema exactly.
    assert!(batches.iter().all(|b| b.schema() == schema));

    // Time travel: S1 (unshredded only), S2 (before the deletion vector).
    for (i, snap) in fx.snapshot_ids.iter().enumerate() {
        let got = rows_json(TableScan::from_table(t.clone()).snapshot_id(*snap));
        assert_eq!(
            got,
            sorted_rows(&[fx.expected_at(*snap).clone()]),
            "snapshot {i}"
        );
    }

    // Selections, filters on other columns, small batches, a limit.
    let expected = fx.expected_current();
    let got = rows_json(
        TableScan::from_table(t.clone())
            .columns(["v", "id"])
            .filter(col("id").gt_eq(1000))
            .batch_size(3),
    );
    let kept = filter_rows(&expected, |r| {
        expected.column(0).as_primitive::<Int64Type>().value(r) >= 1000
    });
    assert_eq!(got, sorted_rows(&[project(&kept, &["v", "id"])]));
    let got = rows_json(
        TableScan::from_table(t.clone())
            .columns(["st", "id"])
            .filter(col("st.a").lt(5)),
    );
    let kept = filter_rows(&expected, |r| {
        expected.column(0).as_primitive::<Int64Type>().value(r) < 5
            && expected.column(0).as_primitive::<Int64Type>().value(r) % 5 != 0
    });
    assert_eq!(got, sorted_rows(&[project(&kept, &["st", "id"])]));
    let (_, limited) = read(TableScan::from_table(t.clone()).columns(["v"]).limit(5)).unwrap();
    assert_eq!(limited.iter().map(|b| b.num_rows()).sum::<usize>(), 5);

    // The variant columns not selected: the table reads like any other.
    assert_eq!(
        rows(TableScan::from_table(t.clone()).columns(["id"])),
        sorted_rows(&[project(&expected, &["id"])])
    );
    // Filters on a variant column are refused, naming it.
    let e = error(
        TableScan::from_table(t.clone())
            .columns(["id"])
            .filter(col("v").is_null()),
    );
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("\"v\""), "{e}");

    // Shipped to another process (the distributed path): the same rows.
    let planned = TableScan::from_table(t.clone()).plan().unwrap();
    assert_eq!(
        planned.plan.output_schema().unwrap(),
        schema,
        "the plan's schema"
    );
    let (shipped_rows, units) = shipped_json(TableScan::from_table(t.clone()));
    assert_eq!(units.len(), 2);
    assert_eq!(shipped_rows, want);

    // Against parquet's own reader of each data file (plus parquet-variant-compute's
    // unshredding): the same bytes at every position rayquet delivers.
    let (_, batches) =
        read(TableScan::from_table(t.clone()).columns(["_file", "_pos", "v", "st"])).unwrap();
    let mut seen = 0;
    for f in &fx.data_files {
        let reference = parquet_reference(&f.local_path);
        assert_eq!(reference.len(), f.rows.num_rows());
        for b in &batches {
            let files = b.column(0).as_string::<i32>();
            let pos = b.column(1).as_primitive::<Int64Type>();
            let st = b.column(3).as_struct();
            for r in 0..b.num_rows() {
                if files.value(r) != f.path {
                    continue;
                }
                let (v, w) = &reference[pos.value(r) as usize];
                assert_eq!(
                    &variant_bytes(b.column(2).as_ref(), r),
                    v,
                    "{} row {}",
                    f.path,
                    pos.value(r)
                );
                let got_w = if st.is_null(r) {
                    None
                } else {
                    variant_bytes(st.column(1).as_ref(), r)
                };
                assert_eq!(&got_w, w, "{} st.w row {}", f.path, pos.value(r));
                seen += 1;
            }
        }
    }
    assert_eq!(seen, expected.num_rows());
}

/// [`rows`] with variants as JSON text.
fn rows_json(scan: TableScan) -> Vec<String> {
    let (_, b) = read(scan).unwrap_or_else(|e| panic!("rayquet: {e}"));
    sorted_rows(&as_json(&b))
}

/// [`shipped`] with variants as JSON text.
fn shipped_json(scan: TableScan) -> (Vec<String>, Vec<TaskUnit>) {
    let planned = scan.plan().expect("plan");
    let plan: ScanPlan =
        serde_json::from_str(&serde_json::to_string(&planned.plan).unwrap()).unwrap();
    let units: Vec<TaskUnit> = futures::executor::block_on(planned.units.collect::<Vec<_>>())
        .into_iter()
        .map(|u| serde_json::from_str(&serde_json::to_string(&u.unwrap()).unwrap()).unwrap())
        .collect();
    let stream = futures::stream::iter(units.clone().into_iter().map(Ok));
    let reader = plan
        .scan(stream, ScanOptions::new().batch_size(5))
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(|b| b.expect("batch")).collect();
    (sorted_rows(&as_json(&batches)), units)
}

#[test]
fn variant_in_caller_planned_tasks() {
    // A table rayquet loaded (normalised), planned by iceberg-rust, read by scan_tasks: S2
    // (S3's deletion vector would be refused in such tasks).
    let fx = v3_variant(8);
    let t = table(&fx);
    let s2 = fx.snapshot_ids[1];
    let tasks = plan_tasks(&t, Some(s2), Some(&["id", "v"]), None, true);
    let scan = scan_tasks(tasks, Some(&t)).unwrap();
    let batches: Vec<RecordBatch> = scan.build().unwrap().map(|b| b.unwrap()).collect();
    assert_eq!(
        sorted_rows(&as_json(&batches)),
        sorted_rows(&[project(fx.expected_at(s2), &["id", "v"])])
    );
}
