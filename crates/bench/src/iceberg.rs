//! Iceberg workloads of the workload benchmark (issue 10): a merge-on-read table of 32 data files
//! (10% of rows position-deleted, 1% equality-deleted), written here, deterministically,
//! under the data dir; read by iceberg-rust's `to_arrow()` (data-file concurrency 1, and its
//! default), by the spawned-task variant of iceberg-rust PR #2342 (one tokio task per
//! file's `ArrowReader` stream, feeding a bounded channel), and by rayquet (the table as of
//! the delete snapshot, and of the snapshot before it: the same table without deletes).
//!
//! Every reader goes through the workload's one `LatencyStore` (so requests are counted, and
//! the latency workload delays them all): the table lives at `rayquet-bench://table/`, a
//! scheme iceberg's FileIO reaches through rayquet-iceberg's `ObjectStoreStorageFactory` and
//! rayquet through `Scan::object_store`, both given that store for the root. Metadata, manifests, delete files and
//! data files all take that path.
//!
//! Without the `iceberg` feature the workloads exist but their readers fail.

use std::path::Path;

use crate::kinds::{Dataset, ReaderId};
use crate::layout::{files_layout, Layout};
use crate::CliResult;

/// The merge-on-read table: 32 files x 4 row groups (2.1 M rows at scale 1).
pub const MOR: Dataset = Dataset {
    name: "iceberg-mor-32x4",
    files: 32,
    row_groups: 4,
    rows_per_row_group: 16_384,
    compression: rayquet_gen::Compression::Snappy,
    wide: false,
};

/// The readers of the Iceberg workloads.
pub const READERS: &[ReaderId] = &[
    ReaderId::IcebergSerial,
    ReaderId::IcebergConcurrent,
    ReaderId::IcebergSpawned,
    ReaderId::RayquetIceberg,
    ReaderId::RayquetIcebergNoDeletes,
];

/// Rows left after deletes, written next to the table.
const LIVE_ROWS: &str = "live-rows.txt";

/// Whether `d` is an Iceberg dataset of this module.
pub fn is_iceberg(d: &Dataset) -> bool {
    d.name == MOR.name
}

/// Write the dataset under `dir` (a fresh directory) unless it is not ours.
pub fn write(d: &Dataset, dir: &Path, scale: f64) -> CliResult<bool> {
    if !is_iceberg(d) {
        return Ok(false);
    }
    imp::write(d, dir, scale)?;
    Ok(true)
}

/// The layout of an Iceberg dataset (its data files' footers; `matching_rows`: the rows left
/// after deletes), or `None` for other datasets.
pub fn layout(dir: &Path, columns: Option<&[&str]>) -> CliResult<Option<Layout>> {
    let live = dir.join(LIVE_ROWS);
    if !live.is_file() {
        return Ok(None);
    }
    let mut l = files_layout(&dir.join("data"), columns, None)?;
    l.matching_rows = Some(std::fs::read_to_string(&live)?.trim().parse()?);
    Ok(Some(l))
}

/// Rows `reader` must deliver, given the layout's counts.
pub fn expected_rows(reader: ReaderId, l: &Layout) -> Option<u64> {
    (reader == ReaderId::RayquetIcebergNoDeletes).then_some(l.rows)
}

/// Run an Iceberg reader over the table behind `input.store`; `see` gets every batch.
pub fn run(
    reader: ReaderId,
    input: &crate::kinds::Input,
    see: &mut dyn FnMut(&arrow::array::RecordBatch),
) -> CliResult<()> {
    imp::run(reader, input, see)
}

mod imp {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
        TimestampMicrosecondArray,
    };
    use arrow::datatypes::SchemaRef;
    use futures::{StreamExt, TryStreamExt};
    use iceberg::arrow::schema_to_arrow_schema;
    use iceberg::io::{FileIO, FileIOBuilder};
    use iceberg::metadata_columns::{delete_file_path_field, delete_file_pos_field};
    use iceberg::spec::{
        DataContentType, DataFileBuilder, DataFileFormat, FormatVersion, ManifestListWriter,
        ManifestWriterBuilder, NestedField, Operation, PartitionSpec, PrimitiveType, Schema,
        Snapshot, SortOrder, Struct, Summary, TableMetadata, TableMetadataBuilder, Type,
        UnboundPartitionSpec, MAIN_BRANCH,
    };
    use iceberg::table::{StaticTable, Table};
    use iceberg::{Runtime, TableIdent};
    use object_store::ObjectStore;
    use parquet::arrow::ArrowWriter;

    use super::*;
    use crate::kinds::{Input, BATCH_SIZE};
    use rayquet::{ScanBuilder, ScanOptions};
    use rayquet_iceberg::storage::ObjectStoreStorageFactory;

    /// Where the table's files are, as its metadata names them.
    const ROOT: &str = "rayquet-bench://table";
    /// The table's metadata file (one, final: the snapshot before deletes and the delete one).
    const METADATA: &str = "metadata/final.metadata.json";

    // --- iceberg's FileIO over the bench's object store -------------------------------------

    /// A FileIO reaching `rayquet-bench://table/<path>` as `<path>` in `store`: rayquet-iceberg's
    /// own object_store `Storage`, with `store` as the scan options' store for the root.
    fn file_io(store: Arc<dyn ObjectStore>) -> FileIO {
        let options = ScanOptions::new().object_store(ROOT, store);
        FileIOBuilder::new(Arc::new(ObjectStoreStorageFactory::new(&options))).build()
    }

    // --- writing the table -------------------------------------------------------------------

    /// splitmix64.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % n
        }
    }

    /// 2024-03-01T00:00:00Z in microseconds.
    const BASE_TS: i64 = 19_783 * 86_400_000_000;

    fn schema() -> CliResult<Schema> {
        let f = |id, name: &str, t: PrimitiveType, required: bool| {
            Arc::new(if required {
                NestedField::required(id, name, Type::Primitive(t))
            } else {
                NestedField::optional(id, name, Type::Primitive(t))
            })
        };
        Ok(Schema::builder()
            .with_schema_id(0)
            .with_fields(vec![
                f(1, "id", PrimitiveType::Long, true),
                f(2, "k", PrimitiveType::Int, false),
                f(3, "cat", PrimitiveType::String, false),
                f(4, "amount", PrimitiveType::Double, false),
                f(5, "ts", PrimitiveType::Timestamptz, false),
                f(6, "note", PrimitiveType::String, false),
            ])
            .build()?)
    }

    /// Rows `first..first + n` (the fixtures' bench generator: `rayquet_testkit::iceberg_tables`).
    fn batch(schema: &SchemaRef, first: i64, n: usize) -> CliResult<RecordBatch> {
        let ids: Vec<i64> = (first..first + n as i64).collect();
        let mut rng = Rng(first as u64 ^ 0x5EED);
        let cats = ["alpha", "beta", "gamma", "delta", "epsilon"];
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Int32Array::from_iter(
                ids.iter()
                    .map(|i| (i % 17 != 0).then_some((i % 1000) as i32)),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| cats[(*i % 5) as usize]),
            )),
            Arc::new(Float64Array::from_iter(ids.iter().map(|i| {
                (i % 23 != 0).then(|| rng.below(1_000_000) as f64 / 100.0)
            }))),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    ids.iter().map(|i| BASE_TS + i * 1_000_003),
                )
                .with_timezone("+00:00"),
            ),
            Arc::new(StringArray::from_iter(ids.iter().map(|i| {
                (i % 29 != 0).then(|| format!("note-{i}-{}", "x".repeat((i % 16) as usize)))
            }))),
        ];
        Ok(RecordBatch::try_new(schema.clone(), cols)?)
    }

    /// Write `batches` as one Parquet file at `<dir>/<rel>`; its size.
    fn write_parquet(
        dir: &Path,
        rel: &str,
        schema: SchemaRef,
        batches: impl IntoIterator<Item = CliResult<RecordBatch>>,
        d: &Dataset,
        rows_per_row_group: usize,
    ) -> CliResult<u64> {
        let path = dir.join(rel);
        let props = rayquet_gen::writer_properties(d.compression, rows_per_row_group);
        let mut w = ArrowWriter::try_new(std::fs::File::create(&path)?, schema, Some(props))?;
        for b in batches {
            w.write(&b?)?;
        }
        w.close()?;
        Ok(std::fs::metadata(&path)?.len())
    }

    fn data_file(
        rel: &str,
        size: u64,
        rows: u64,
        content: DataContentType,
    ) -> CliResult<DataFileBuilder> {
        let mut b = DataFileBuilder::default();
        b.content(content)
            .file_path(format!("{ROOT}/{rel}"))
            .file_format(DataFileFormat::Parquet)
            .file_size_in_bytes(size)
            .record_count(rows)
            .partition(Struct::empty())
            .partition_spec_id(0);
        Ok(b)
    }

    fn now_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// Write the table: S1 appends the data files; S2 adds one position-delete file per data
    /// file (~10% of its rows, `referenced_data_file` set) and one equality-delete file on
    /// `id` (~1% of all rows). Seeded: the same rows and deletes on every run.
    pub fn write(d: &Dataset, dir: &Path, scale: f64) -> CliResult<()> {
        let rows_per_group = ((d.rows_per_row_group as f64 * scale) as usize).max(100);
        let rows_per_file = rows_per_group * d.row_groups;
        for sub in ["data", "deletes", "metadata"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let io = file_io(Arc::new(
            object_store::local::LocalFileSystem::new_with_prefix(dir)?,
        ));
        // The schema as the metadata assigns its ids.
        let md = TableMetadataBuilder::new(
            schema()?,
            UnboundPartitionSpec::builder().build(),
            SortOrder::unsorted_order(),
            ROOT.to_string(),
            FormatVersion::V2,
            HashMap::new(),
        )?
        .build()?
        .metadata;
        let schema = md.current_schema().clone();
        let arrow = Arc::new(schema_to_arrow_schema(&schema)?);
        let (mut data, mut deletes) = (Vec::new(), Vec::new());
        let mut rng = Rng(0xDE1E7E);
        let total = d.files * rows_per_file;
        let mut live = total as u64;
        let mut deleted = vec![false; total];
        for f in 0..d.files {
            let rel = format!("data/data-{f:05}.parquet");
            let first = (f * rows_per_file) as i64;
            let chunks = (0..rows_per_file)
                .step_by(65_536)
                .map(|o| batch(&arrow, first + o as i64, (rows_per_file - o).min(65_536)));
            let size = write_parquet(dir, &rel, arrow.clone(), chunks, d, rows_per_group)?;
            let df = data_file(&rel, size, rows_per_file as u64, DataContentType::Data)?;
            data.push(df.build()?);
            // Its position deletes.
            let positions: Vec<i64> = (0..rows_per_file as i64)
                .filter(|_| rng.below(10) == 0)
                .collect();
            let pos_schema = Arc::new(schema_to_arrow_schema(
                &Schema::builder()
                    .with_fields(vec![
                        delete_file_path_field().clone(),
                        delete_file_pos_field().clone(),
                    ])
                    .build()?,
            )?);
            let path = format!("{ROOT}/{rel}");
            let b = RecordBatch::try_new(
                pos_schema.clone(),
                vec![
                    Arc::new(StringArray::from_iter_values(
                        positions.iter().map(|_| path.as_str()),
                    )),
                    Arc::new(Int64Array::from(positions.clone())),
                ],
            )?;
            let drel = format!("deletes/pos-{f:05}.parquet");
            let size = write_parquet(dir, &drel, pos_schema, [Ok(b)], d, 1 << 20)?;
            let mut df = data_file(
                &drel,
                size,
                positions.len() as u64,
                DataContentType::PositionDeletes,
            )?;
            df.referenced_data_file(Some(path));
            deletes.push(df.build()?);
            for p in positions {
                deleted[f * rows_per_file + p as usize] = true;
                live -= 1;
            }
        }
        // Equality deletes on `id`: ~1% of all rows.
        let ids: Vec<i64> = (0..total as i64).filter(|_| rng.below(100) == 0).collect();
        for id in &ids {
            if !std::mem::replace(&mut deleted[*id as usize], true) {
                live -= 1;
            }
        }
        let id_schema = Arc::new(arrow.project(&[0])?);
        let b = RecordBatch::try_new(id_schema.clone(), vec![Arc::new(Int64Array::from(ids))])?;
        let rows = b.num_rows() as u64;
        let drel = "deletes/eq-id.parquet";
        let size = write_parquet(dir, drel, id_schema, [Ok(b)], d, 1 << 20)?;
        let mut df = data_file(drel, size, rows, DataContentType::EqualityDeletes)?;
        df.equality_ids(Some(vec![schema.field_id_by_name("id").ok_or("no id")?]));
        deletes.push(df.build()?);

        // Manifests, manifest lists, snapshots, metadata.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let md: TableMetadata = rt.block_on(async {
            let spec = PartitionSpec::unpartition_spec();
            let manifest = |name: &str, snap: i64| -> iceberg::Result<_> {
                let out = io.new_output(format!("{ROOT}/metadata/{name}.avro"))?;
                Ok(ManifestWriterBuilder::new(
                    out,
                    Some(snap),
                    schema.clone(),
                    spec.clone(),
                ))
            };
            let mut w = manifest("data-1", 1)?.build_v2_data();
            for f in data {
                w.add_file(f, 1)?;
            }
            let m1 = w.write_manifest_file().await?;
            let mut w = manifest("deletes-2", 2)?.build_v2_deletes();
            for f in deletes {
                w.add_file(f, 2)?;
            }
            let m2 = w.write_manifest_file().await?;
            let list =
                |snap: i64, parent: Option<i64>, manifests: Vec<iceberg::spec::ManifestFile>| {
                    let io = io.clone();
                    async move {
                        let path = format!("{ROOT}/metadata/snap-{snap}.avro");
                        let mut w = ManifestListWriter::v2(
                            io.new_output(&path)?.writer().await?,
                            snap,
                            parent,
                            snap,
                        );
                        w.add_manifests(manifests.into_iter())?;
                        w.close().await?;
                        iceberg::Result::Ok(path)
                    }
                };
            let l1 = list(1, None, vec![m1.clone()]).await?;
            // In S2's list, S1's manifest keeps the sequence number S1's list gave it.
            let mut m1 = m1;
            m1.sequence_number = 1;
            m1.min_sequence_number = 1;
            let l2 = list(2, Some(1), vec![m1, m2]).await?;
            let snapshot = |id: i64, list: String, op: Operation| {
                Snapshot::builder()
                    .with_snapshot_id(id)
                    .with_parent_snapshot_id((id > 1).then_some(id - 1))
                    .with_sequence_number(id)
                    .with_timestamp_ms(now_ms())
                    .with_manifest_list(list)
                    .with_schema_id(schema.schema_id())
                    .with_summary(Summary {
                        operation: op,
                        additional_properties: HashMap::new(),
                    })
                    .build()
            };
            let md = md
                .into_builder(None)
                .set_branch_snapshot(snapshot(1, l1, Operation::Append), MAIN_BRANCH)?
                .build()?
                .metadata
                .into_builder(None)
                .set_branch_snapshot(snapshot(2, l2, Operation::Overwrite), MAIN_BRANCH)?
                .build()?
                .metadata;
            iceberg::Result::Ok(md)
        })?;
        std::fs::write(dir.join(METADATA), serde_json::to_vec(&md)?)?;
        std::fs::write(dir.join(LIVE_ROWS), format!("{live}\n"))?;
        Ok(())
    }

    // --- reading it --------------------------------------------------------------------------

    fn multi_thread(threads: usize) -> CliResult<tokio::runtime::Runtime> {
        Ok(tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?)
    }

    /// The table through the bench store, bound to `rt` (iceberg plans and spawns there).
    async fn table(store: Arc<dyn ObjectStore>) -> iceberg::Result<Table> {
        let ident = TableIdent::from_strs(["bench", "table"])?;
        let t =
            StaticTable::from_metadata_file(&format!("{ROOT}/{METADATA}"), ident, file_io(store))
                .await?;
        Ok(t.into_table())
    }

    /// The first snapshot (before the deletes).
    fn first_snapshot(t: &Table) -> CliResult<i64> {
        t.metadata()
            .snapshots()
            .map(|s| s.snapshot_id())
            .min()
            .ok_or_else(|| "the table has no snapshot".into())
    }

    pub fn run(
        reader: ReaderId,
        input: &Input,
        see: &mut dyn FnMut(&RecordBatch),
    ) -> CliResult<()> {
        match reader {
            ReaderId::IcebergSerial => to_arrow(input, Some(1), see),
            ReaderId::IcebergConcurrent => to_arrow(input, None, see),
            ReaderId::IcebergSpawned => spawned(input, see),
            ReaderId::RayquetIceberg => rayquet(input, false, see),
            ReaderId::RayquetIcebergNoDeletes => rayquet(input, true, see),
            other => Err(format!("{} is not an Iceberg reader", other.name()).into()),
        }
    }

    fn select<'a>(
        b: iceberg::scan::TableScanBuilder<'a>,
        input: &Input,
    ) -> iceberg::scan::TableScanBuilder<'a> {
        match &input.columns {
            Some(c) => b.select(c.iter().cloned()),
            None => b.select_all(),
        }
    }

    /// iceberg-rust's `TableScan::to_arrow()`, at data-file concurrency `concurrency` (default:
    /// the CPU count), polled by this thread.
    fn to_arrow(
        input: &Input,
        concurrency: Option<usize>,
        see: &mut dyn FnMut(&RecordBatch),
    ) -> CliResult<()> {
        let rt = multi_thread(input.cores)?;
        rt.block_on(async {
            let table = table(input.store.clone()).await?;
            let mut b = select(table.scan(), input).with_batch_size(Some(BATCH_SIZE));
            if let Some(n) = concurrency {
                b = b.with_data_file_concurrency_limit(n);
            }
            let mut stream = b.build()?.to_arrow().await?;
            while let Some(batch) = stream.next().await {
                see(&batch?);
            }
            CliResult::Ok(())
        })
    }

    /// iceberg-rust PR #2342's pattern: every planned task's `ArrowReader` stream driven by a
    /// tokio task of its own, feeding one bounded channel the caller drains.
    fn spawned(input: &Input, see: &mut dyn FnMut(&RecordBatch)) -> CliResult<()> {
        let rt = multi_thread(input.cores)?;
        let (tx, mut rx) = tokio::sync::mpsc::channel(2 * input.cores);
        let planner = rt.block_on(async {
            let table = table(input.store.clone()).await?;
            let scan = select(table.scan(), input).build()?;
            let tasks: Vec<_> = scan.plan_files().await?.try_collect().await?;
            let reader = iceberg::arrow::ArrowReaderBuilder::new(
                table.file_io().clone(),
                Runtime::try_current()?,
            )
            .with_data_file_concurrency_limit(1)
            .with_batch_size(BATCH_SIZE)
            .build();
            iceberg::Result::Ok((tasks, reader))
        });
        let (tasks, reader) = planner?;
        for task in tasks {
            let (tx, reader) = (tx.clone(), reader.clone());
            rt.spawn(async move {
                let one = futures::stream::iter([Ok(task)]).boxed();
                let mut stream = match reader.read(one) {
                    Ok(r) => r.stream(),
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                while let Some(batch) = stream.next().await {
                    if tx.send(batch).await.is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        while let Some(batch) = rx.blocking_recv() {
            see(&batch?);
        }
        Ok(())
    }

    /// rayquet's `TableScan` (planning and delete files through the same store).
    fn rayquet(input: &Input, first: bool, see: &mut dyn FnMut(&RecordBatch)) -> CliResult<()> {
        let options = ScanOptions::new()
            .object_store(ROOT, input.store.clone())
            .batch_size(BATCH_SIZE);
        let store = input.store.clone();
        let table = rayquet::layer::block_on(&options, async move {
            table(store)
                .await
                .map_err(|e| rayquet::Error::new(rayquet::ErrorKind::Io, e.to_string()))
        })?;
        let mut scan = rayquet_iceberg::TableScan::from_table(table.clone()).with_options(options);
        if first {
            scan = scan.snapshot_id(first_snapshot(&table)?);
        }
        if let Some(c) = &input.columns {
            scan = scan.columns(c.clone());
        }
        if let Some(budget) = input.budget {
            scan = scan.memory_budget(budget);
        }
        for batch in scan.build()? {
            see(&batch?);
        }
        Ok(())
    }
}
