//! Iceberg tables that iceberg-rust 0.10.1 cannot write by itself: format v3 (deletion
//! vectors, row lineage, initial defaults, nanosecond timestamps, `unknown`, `variant` and
//! `geometry` columns) and a format v1 table after partition evolution (a removed partition
//! field kept as `void` under its column's name), written as the Iceberg spec lays them out.
//!
//! The tables are written with iceberg-rust's writers where it has them (data files,
//! manifests, manifest lists, Puffin files) and finished by hand where it refuses what real
//! writers produce: deletion-vector blobs are serialized here (Roaring portable format, magic,
//! CRC-32, independently of rayquet's reader), types iceberg-rust lacks are written as
//! `binary` and renamed in the metadata JSON and the manifests' headers afterwards, and so is
//! the void field's name. `Fixture::table` is the table as iceberg-rust saw it before those
//! renames (it cannot load the final metadata).
//!
//! Every fixture records what it wrote; expectations are the rows written minus the deletes
//! chosen (`Fixture::expected`), never read back from the files.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, FormatVersion, ListType, Literal,
    NestedField, Operation, PartitionKey, PrimitiveLiteral, PrimitiveType, Struct, StructType,
    Transform, Type, UnboundPartitionField, UnboundPartitionSpec, MAIN_BRANCH,
};
use iceberg::transaction::AddColumn;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;
use serde_json::Value;

use crate::iceberg_tables::*;

/// Field ids of the row lineage columns as data files store them.
pub const ROW_ID_FIELD_ID: i32 = i32::MAX - 107;
/// See [`ROW_ID_FIELD_ID`].
pub const LAST_UPDATED_FIELD_ID: i32 = i32::MAX - 108;

// ---------------------------------------------------------------------------------------------
// Files rewritten after iceberg-rust wrote them
// ---------------------------------------------------------------------------------------------

fn read_long(b: &[u8], pos: &mut usize) -> i64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*pos];
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return ((v >> 1) as i64) ^ -((v & 1) as i64);
        }
    }
}

fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Rewrite the header entries of the Avro container file at `path` (`f(key, value)` returns
/// the new value); the blocks are kept as they are.
pub fn rewrite_avro_header(path: &Path, mut f: impl FnMut(&str, Vec<u8>) -> Vec<u8>) {
    let b = std::fs::read(path).expect("read avro");
    assert_eq!(
        &b[..4],
        b"Obj\x01",
        "{} is not an Avro file",
        path.display()
    );
    let mut pos = 4;
    let mut meta = Vec::new();
    loop {
        let mut n = read_long(&b, &mut pos);
        if n == 0 {
            break;
        }
        if n < 0 {
            n = -n;
            read_long(&b, &mut pos);
        }
        for _ in 0..n {
            let len = read_long(&b, &mut pos) as usize;
            let key = String::from_utf8(b[pos..pos + len].to_vec()).unwrap();
            pos += len;
            let len = read_long(&b, &mut pos) as usize;
            let value = b[pos..pos + len].to_vec();
            pos += len;
            meta.push((key, value));
        }
    }
    let mut out = b"Obj\x01".to_vec();
    write_long(&mut out, meta.len() as i64);
    for (k, v) in meta {
        let v = f(&k, v);
        write_long(&mut out, k.len() as i64);
        out.extend_from_slice(k.as_bytes());
        write_long(&mut out, v.len() as i64);
        out.extend_from_slice(&v);
    }
    write_long(&mut out, 0);
    out.extend_from_slice(&b[pos..]);
    std::fs::write(path, out).expect("write avro");
}

/// Rewrite a JSON file in place.
pub fn rewrite_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// In schema JSON, set the type of the fields (or list elements) with these ids.
fn retype(schema: &mut Value, types: &HashMap<i64, &str>) {
    match schema {
        Value::Object(o) => {
            if let Some(id) = o.get("id").and_then(Value::as_i64) {
                if let Some(t) = types.get(&id) {
                    o.insert("type".into(), Value::String(t.to_string()));
                    o.remove("initial-default");
                    o.remove("write-default");
                }
            }
            if let Some(id) = o.get("element-id").and_then(Value::as_i64) {
                if let Some(t) = types.get(&id) {
                    o.insert("element".into(), Value::String(t.to_string()));
                }
            }
            for v in o.values_mut() {
                retype(v, types);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| retype(v, types)),
        _ => {}
    }
}

/// The manifests (not manifest lists) under a table's `metadata/`.
fn manifests(table_root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(table_root.join("metadata")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "avro") {
            let b = std::fs::read(&p).unwrap();
            // A manifest's header has a `partition-spec`; a manifest list's has not.
            if b.windows(14).any(|w| w == b"partition-spec") {
                out.push(p);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Deletion vectors
// ---------------------------------------------------------------------------------------------

/// A `deletion-vector-v1` blob of these positions (the Puffin spec's layout).
pub fn dv_blob(positions: &[u64]) -> Vec<u8> {
    let bitmap: rayquet::task::RoaringTreemap = positions.iter().copied().collect();
    let mut body = vec![0xD1, 0xD3, 0x39, 0x64];
    bitmap.serialize_into(&mut body).unwrap();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out
}

/// How a deletion vector fixture is damaged (the first vector of its Puffin file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Every vector is sound.
    None,
    /// The manifest entry's record count is not the vector's cardinality.
    Cardinality,
    /// The manifest entry's offset + size lie beyond the Puffin file.
    OutOfFile,
    /// The vector deletes a position past the end of its data file.
    PastEnd,
    /// The vector deletes positions `0..2^34` (one run per container, 2^18 containers: about
    /// 3 MB), and its manifest entry says so: consistent, and far past its data file's rows.
    Huge,
}

/// The positions of [`Damage::Huge`].
pub const HUGE_VECTOR: u64 = 1 << 34;

/// A `deletion-vector-v1` blob of positions `0..n`, as runs (never expanded).
pub fn dv_blob_range(n: u64) -> Vec<u8> {
    let mut bitmap = rayquet::task::RoaringTreemap::new();
    bitmap.insert_range(0..n);
    let mut body = vec![0xD1, 0xD3, 0x39, 0x64];
    bitmap.serialize_into(&mut body).unwrap();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out
}

/// Write one Puffin file holding a deletion vector per `(data file, positions)`, through
/// iceberg's `PuffinWriter`; returns the delete `DataFile`s (one per vector) and their rows.
fn write_vectors(
    h: &mut Harness,
    vectors: &[(String, Vec<u64>)],
    damage: Damage,
) -> Vec<(DataFile, RecordBatch, u64, u64)> {
    let tag = h.next_tag("dv");
    let location = h.table.metadata().location().to_string();
    let uri = format!("{location}/data/{tag}.puffin");
    let file_io = h.table.file_io().clone();
    let blobs: Vec<Vec<u8>> = vectors
        .iter()
        .enumerate()
        .map(|(i, (_, p))| match (i, damage) {
            (0, Damage::Huge) => dv_blob_range(HUGE_VECTOR),
            _ => dv_blob(p),
        })
        .collect();
    block_on(async {
        let out = file_io.new_output(&uri)?;
        let mut w = iceberg::puffin::PuffinWriter::new(&out, HashMap::new(), false).await?;
        for ((data, positions), blob) in vectors.iter().zip(&blobs) {
            let blob = iceberg::puffin::Blob::builder()
                .r#type(iceberg::puffin::DELETION_VECTOR_V1.to_string())
                .fields(vec![])
                .snapshot_id(-1)
                .sequence_number(-1)
                .data(blob.clone())
                .properties(HashMap::from([
                    ("referenced-data-file".to_string(), data.clone()),
                    ("cardinality".to_string(), positions.len().to_string()),
                ]))
                .build();
            w.add(blob, iceberg::compression::CompressionCodec::None)
                .await?;
        }
        w.close().await
    })
    .expect("write Puffin file");
    let local = local_path(&uri);
    let bytes = std::fs::read(&local).unwrap();
    let size = bytes.len() as u64;
    // Blobs follow the 4-byte magic, in order.
    let mut offset = 4u64;
    let mut out = Vec::new();
    for (i, ((data, positions), blob)) in vectors.iter().zip(&blobs).enumerate() {
        let length = blob.len() as u64;
        assert_eq!(
            &bytes[offset as usize..(offset + length) as usize],
            &blob[..]
        );
        let (mut off, mut card) = (offset, positions.len() as u64);
        if i == 0 {
            match damage {
                Damage::Cardinality => card += 1,
                Damage::OutOfFile => off = size,
                Damage::Huge => card = HUGE_VECTOR,
                _ => {}
            }
        }
        let df = DataFileBuilder::default()
            .content(DataContentType::PositionDeletes)
            .file_path(uri.clone())
            .file_format(DataFileFormat::Puffin)
            .file_size_in_bytes(size)
            .record_count(card)
            .partition(Struct::empty())
            .partition_spec_id(h.table.metadata().default_partition_spec_id())
            .referenced_data_file(Some(data.clone()))
            .content_offset(Some(off as i64))
            .content_size_in_bytes(Some(length as i64))
            .build()
            .expect("deletion vector DataFile");
        let rows = pos_rows(data, positions);
        out.push((df, rows, offset, length));
        offset += length;
    }
    out
}

/// `(file_path, pos)` rows, as position deletes record them.
fn pos_rows(data: &str, positions: &[u64]) -> RecordBatch {
    RecordBatch::try_new(
        Arc::new(ArrowSchema::new(vec![
            Field::new("file_path", DataType::Utf8, false),
            Field::new("pos", DataType::Int64, false),
        ])),
        vec![
            Arc::new(StringArray::from(vec![data; positions.len()])),
            Arc::new(Int64Array::from(
                positions.iter().map(|p| *p as i64).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap()
}

fn v3_rows(schema: &arrow::datatypes::SchemaRef, first: i64, n: usize) -> RecordBatch {
    let rows: Vec<Row> = (0..n as i64)
        .map(|i| {
            let id = first + i;
            row(vec![
                ("id", V::I64(id)),
                (
                    "s",
                    if id % 5 == 0 {
                        V::Null
                    } else {
                        s(&format!("s{id}"))
                    },
                ),
            ])
        })
        .collect();
    batch_from_rows(schema, &rows)
}

/// The first row id of S1's data manifest (a new v3 table's `next-row-id`).
pub const V3_FIRST_ROW_ID: i64 = 0;
/// The explicit `first_row_id` of the file written with materialised row lineage.
pub const V3_EXPLICIT_FIRST_ROW_ID: i64 = 777_000;

/// A format v3 table (`id long required, s string`, unpartitioned) with deletion vectors
/// and row lineage. `n` rows per file (two row groups each).
///
/// * S1 (seq 1): D0, D1, D2 (ids `0..3n`), first row ids inherited: 0, n, 2n.
/// * S2 (seq 2): position-delete files (Parquet) P1 → D1 `{1, 2}`, P2 → D2 `{0, 3}`.
/// * S3 (seq 3): one Puffin file with the deletion vectors of D0 `{0, 5}`, D1 `{1, 2, 7}`
///   (P1's positions and one more: the spec has a vector hold the position deletes it
///   replaces) and D3 `{2}`; and data files D4 (ids `10n..11n`), D3 (ids `20n..21n`,
///   explicit first row id [`V3_EXPLICIT_FIRST_ROW_ID`], `_row_id` stored for even rows
///   as `100 + row`, `_last_updated_sequence_number` stored as 1 for rows divisible by 3),
///   D5 (ids `30n..31n`), in that manifest order: D4 and D5 inherit `3n` and `4n` (D3,
///   which has its own, does not count).
///
/// D2 keeps P2 (no vector); D0, D1, D3 have vectors. `damage` spoils the first vector (D0's).
pub fn v3_deletes(n: usize, damage: Damage) -> Fixture {
    assert!(n >= 10);
    let schema = schema_of(vec![
        req(1, "id", Type::Primitive(PrimitiveType::Long)),
        opt(2, "s", Type::Primitive(PrimitiveType::String)),
    ]);
    let mut h = Harness::new(
        "v3_deletes",
        schema,
        None,
        HashMap::new(),
        FormatVersion::V3,
    );
    assert_eq!(h.table.metadata().next_row_id(), V3_FIRST_ROW_ID as u64);
    let arrow = h.arrow_schema();
    let props = writer_props(n / 2);
    let d: Vec<_> = (0..3)
        .map(|i| h.write_data(&v3_rows(&arrow, i * n as i64, n), None, props.clone()))
        .collect();
    let paths: Vec<String> = d.iter().map(|(f, _)| f.file_path().to_string()).collect();
    let (s1, _) = h.commit_snapshot(MAIN_BRANCH, d.clone(), vec![], true, Operation::Append);
    for (i, f) in h.data_files.iter_mut().enumerate() {
        f.first_row_id = Some(V3_FIRST_ROW_ID + (i * n) as i64);
    }
    let e1 = concat_rows(&arrow, &d);
    h.expected.insert(s1, e1);

    // S2: Parquet position deletes.
    let p1 = h.write_pos_deletes(
        vec![(paths[1].clone(), 1), (paths[1].clone(), 2)],
        None,
        Some(paths[1].clone()),
    );
    let p2 = h.write_pos_deletes(
        vec![(paths[2].clone(), 0), (paths[2].clone(), 3)],
        None,
        Some(paths[2].clone()),
    );
    let s2 = commit_deletes_v3(&mut h, vec![(p1.0, p1.1, None), (p2.0, p2.1, None)], vec![]);
    let _ = s2;

    // S3: deletion vectors (one Puffin file) and three data files.
    let d4 = h.write_data(&v3_rows(&arrow, 10 * n as i64, n), None, props.clone());
    let d5 = h.write_data(&v3_rows(&arrow, 30 * n as i64, n), None, props.clone());
    let d3 = write_with_lineage(&mut h, &v3_rows(&arrow, 20 * n as i64, n));
    let d3_path = d3.0.file_path().to_string();
    let mut d0_positions = vec![0, 5];
    if damage == Damage::PastEnd {
        d0_positions.push(n as u64 + 3);
    }
    let vectors = write_vectors(
        &mut h,
        &[
            (paths[0].clone(), d0_positions),
            (paths[1].clone(), vec![1, 2, 7]),
            (d3_path.clone(), vec![2]),
        ],
        damage,
    );
    let first3 = h.table.metadata().next_row_id() as i64;
    assert_eq!(first3, 3 * n as i64, "S1 assigned 3n row ids");
    let deletes = vectors
        .into_iter()
        .map(|(f, rows, offset, length)| (f, rows, Some((offset, length))))
        .collect();
    commit_deletes_v3(&mut h, deletes, vec![d4.clone(), d3.clone(), d5.clone()]);
    let k = h.data_files.len();
    h.data_files[k - 3].first_row_id = Some(first3);
    h.data_files[k - 2].first_row_id = Some(V3_EXPLICIT_FIRST_ROW_ID);
    h.data_files[k - 1].first_row_id = Some(first3 + n as i64);
    h.finish()
}

/// A delete file, its rows, and (a deletion vector) its offset and length in its Puffin file.
type Delete = (DataFile, RecordBatch, Option<(u64, u64)>);

/// Commit delete files (and data files) as one v3 snapshot; records the deletes
/// (`vector`: a deletion vector's offset and length in its Puffin file).
fn commit_deletes_v3(
    h: &mut Harness,
    deletes: Vec<Delete>,
    data: Vec<(DataFile, RecordBatch)>,
) -> i64 {
    let files: Vec<DataFile> = deletes.iter().map(|(f, _, _)| f.clone()).collect();
    let (snap, seq) = h.commit_snapshot(MAIN_BRANCH, data, files, true, Operation::Overwrite);
    for (f, rows, vector) in deletes {
        h.delete_files.push(WrittenDelete {
            path: f.file_path().to_string(),
            local_path: local_path(f.file_path()),
            snapshot_id: snap,
            sequence_number: seq,
            kind: match vector {
                Some((offset, length)) => DeleteKind::Vector { offset, length },
                None => DeleteKind::Position,
            },
            rows,
            referenced_data_file: f.referenced_data_file(),
            partition: f.partition().clone(),
        });
    }
    snap
}

/// A data file holding `batch` plus stored row lineage (`_row_id` = 100 + row for even rows,
/// `_last_updated_sequence_number` = 1 for rows divisible by 3, null elsewhere), written by
/// parquet's `ArrowWriter` with field ids; its manifest entry has an explicit first row id.
/// The returned rows include the lineage columns.
fn write_with_lineage(h: &mut Harness, batch: &RecordBatch) -> (DataFile, RecordBatch) {
    let n = batch.num_rows();
    let id_field = |name: &str, id: i32| {
        Field::new(name, DataType::Int64, true).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    };
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(id_field("_row_id", ROW_ID_FIELD_ID));
    fields.push(id_field(
        "_last_updated_sequence_number",
        LAST_UPDATED_FIELD_ID,
    ));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(Int64Array::from(
        (0..n as i64)
            .map(|i| (i % 2 == 0).then_some(100 + i))
            .collect::<Vec<_>>(),
    )));
    columns.push(Arc::new(Int64Array::from(
        (0..n as i64)
            .map(|i| (i % 3 == 0).then_some(1))
            .collect::<Vec<_>>(),
    )));
    let full = RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).unwrap();
    let df = write_data_file(
        h,
        "lineage",
        &full,
        ArrowWriterOptions::new(),
        Some(V3_EXPLICIT_FIRST_ROW_ID),
    );
    (df, full)
}

/// Write `batch` as the data file `data/<tag>.parquet` of `h`'s table (two row groups) with
/// `options`, and its `DataFile` (unpartitioned; `first_row_id` for row lineage).
fn write_data_file(
    h: &mut Harness,
    tag: &str,
    batch: &RecordBatch,
    options: ArrowWriterOptions,
    first_row_id: Option<i64>,
) -> DataFile {
    let n = batch.num_rows();
    let tag = h.next_tag(tag);
    let uri = format!("{}/data/{tag}.parquet", h.table.metadata().location());
    let local = local_path(&uri);
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    let mut w = ArrowWriter::try_new_with_options(
        std::fs::File::create(&local).unwrap(),
        batch.schema(),
        options.with_properties(writer_props(n / 2)),
    )
    .unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    DataFileBuilder::default()
        .content(DataContentType::Data)
        .file_path(uri)
        .file_format(DataFileFormat::Parquet)
        .file_size_in_bytes(std::fs::metadata(&local).unwrap().len())
        .record_count(n as u64)
        .partition(Struct::empty())
        .partition_spec_id(h.table.metadata().default_partition_spec_id())
        .first_row_id(first_row_id)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// v3 types and defaults
// ---------------------------------------------------------------------------------------------

/// The columns added to [`v3_types`] after its first file, with their initial defaults (as
/// an Iceberg literal, and as the Arrow value rendered by `sorted_rows`).
pub fn v3_defaults() -> Vec<(&'static str, PrimitiveType, Literal)> {
    use PrimitiveLiteral as L;
    vec![
        ("d_int", PrimitiveType::Int, Literal::Primitive(L::Int(7))),
        (
            "d_long",
            PrimitiveType::Long,
            Literal::Primitive(L::Long(1 << 40)),
        ),
        (
            "d_str",
            PrimitiveType::String,
            Literal::Primitive(L::String("dflt".into())),
        ),
        (
            "d_bool",
            PrimitiveType::Boolean,
            Literal::Primitive(L::Boolean(true)),
        ),
        (
            "d_double",
            PrimitiveType::Double,
            Literal::Primitive(L::Double(2.5.into())),
        ),
        (
            "d_dec",
            PrimitiveType::Decimal {
                precision: 9,
                scale: 2,
            },
            Literal::Primitive(L::Int128(314)),
        ),
        (
            "d_date",
            PrimitiveType::Date,
            Literal::Primitive(L::Int(19000)),
        ),
        (
            "d_ts",
            PrimitiveType::Timestamp,
            Literal::Primitive(L::Long(BASE_TS)),
        ),
        (
            "d_tsns",
            PrimitiveType::TimestampNs,
            Literal::Primitive(L::Long(1_700_000_000_123_456_789)),
        ),
        (
            "d_tstzns",
            PrimitiveType::TimestamptzNs,
            // Positive: iceberg-rust 0.10.1 panics writing a negative one to JSON.
            Literal::Primitive(L::Long(1_234_567_891)),
        ),
    ]
}

/// A format v3 table of v3 types: `id long required, ts_ns timestamp_ns, tstz_ns
/// timestamptz_ns, u unknown, v variant, g geometry, st struct<a int, nu unknown>`; after
/// file F1 (S1, `n` rows), the columns of [`v3_defaults`] are added (required, with those
/// initial defaults) and F2 (S2, `n` rows) is written with values of its own. The metadata
/// and the manifests' headers name `unknown`, `variant` and `geometry` (iceberg-rust wrote
/// them as `binary`); the files hold nulls for `g`, and no `u`, `st.nu` or `v` (which read
/// null).
///
/// `expected[S2]` has every column but `v` and `g`, `u` and `st.nu` typed `Null`.
pub fn v3_types(n: usize) -> Fixture {
    let bin = || Type::Primitive(PrimitiveType::Binary);
    let schema = schema_of(vec![
        req(1, "id", Type::Primitive(PrimitiveType::Long)),
        opt(2, "ts_ns", Type::Primitive(PrimitiveType::TimestampNs)),
        opt(3, "tstz_ns", Type::Primitive(PrimitiveType::TimestamptzNs)),
        opt(4, "u", bin()),
        opt(5, "v", bin()),
        opt(6, "g", bin()),
        opt(
            7,
            "st",
            Type::Struct(StructType::new(vec![
                opt(8, "a", Type::Primitive(PrimitiveType::Int)),
                opt(9, "nu", bin()),
            ])),
        ),
    ]);
    let mut h = Harness::new("v3_types", schema, None, HashMap::new(), FormatVersion::V3);
    let ids = |h: &Harness| -> HashMap<&'static str, i32> {
        let s = h.schema();
        ["u", "v", "g", "st.nu"]
            .into_iter()
            .map(|n| (n, s.field_by_name(n).unwrap().id))
            .collect()
    };
    let rows = |first: i64, extra: bool| -> Vec<Row> {
        (0..n as i64)
            .map(|i| {
                let id = first + i;
                let mut r = vec![
                    ("id", V::I64(id)),
                    (
                        "ts_ns",
                        if i % 4 == 1 {
                            V::Null
                        } else {
                            V::I64(1_700_000_000_000_000_000 + id * 1_000_000_007)
                        },
                    ),
                    ("tstz_ns", V::I64(-id * 999)),
                    ("u", V::Null),
                    ("v", V::Null),
                    ("g", V::Null),
                    (
                        "st",
                        V::Struct(row(vec![
                            (
                                "a",
                                if i % 3 == 0 {
                                    V::Null
                                } else {
                                    V::I32(i as i32)
                                },
                            ),
                            ("nu", V::Null),
                        ])),
                    ),
                ];
                if extra {
                    r.extend([
                        ("d_int", V::I32(-(i as i32))),
                        ("d_long", V::I64(i)),
                        ("d_str", s(&format!("v{i}"))),
                        ("d_bool", V::Bool(false)),
                        ("d_double", V::F64(-1.5)),
                        ("d_dec", V::Dec(-(i as i128))),
                        ("d_date", V::I32(1 + i as i32)),
                        ("d_ts", V::I64(i)),
                        ("d_tsns", V::I64(i * 3)),
                        ("d_tstzns", V::I64(i * 5)),
                    ]);
                }
                row(r)
            })
            .collect()
    };
    // Data files hold no `unknown` column (writers never store one), nor `v` (a variant is a
    // Parquet group iceberg-rust's writer cannot write; `v3_variant` has them): it reads null.
    let unknown = |h: &Harness| {
        vec![
            h.schema().field_by_name("u").unwrap().id,
            h.schema().field_by_name("st.nu").unwrap().id,
            h.schema().field_by_name("v").unwrap().id,
        ]
    };
    let write = |h: &mut Harness, rows: &[Row]| {
        let file_schema = Arc::new(drop_ids(&h.schema(), &unknown(h)));
        let batch = batch_from_rows(&arrow_schema_of(&file_schema), rows);
        h.write_data_with(&batch, file_schema, None, writer_props(n))
    };
    let f1_rows = rows(0, false);
    let f1 = write(&mut h, &f1_rows);
    h.append(vec![f1]);
    let adds = v3_defaults()
        .into_iter()
        .map(|(name, ty, lit)| AddColumn::required(name, Type::Primitive(ty), lit))
        .collect();
    h.update_schema(adds, vec![]);
    let arrow = h.arrow_schema();
    let f2_rows = rows(1000, true);
    let f2 = write(&mut h, &f2_rows);
    let s2 = h.append(vec![f2]);
    // The spec's answer: F1's rows with the initial defaults.
    let defaults: Vec<(&str, V)> = vec![
        ("d_int", V::I32(7)),
        ("d_long", V::I64(1 << 40)),
        ("d_str", s("dflt")),
        ("d_bool", V::Bool(true)),
        ("d_double", V::F64(2.5)),
        ("d_dec", V::Dec(314)),
        ("d_date", V::I32(19000)),
        ("d_ts", V::I64(BASE_TS)),
        ("d_tsns", V::I64(1_700_000_000_123_456_789)),
        ("d_tstzns", V::I64(1_234_567_891)),
    ];
    let mut all: Vec<Row> = f1_rows
        .into_iter()
        .map(|r| {
            let mut r = r;
            r.extend(defaults.iter().map(|(k, v)| (k.to_string(), v.clone())));
            r
        })
        .collect();
    all.extend(f2_rows);
    h.expected.insert(s2, batch_from_rows(&arrow, &all));
    let ids = ids(&h);
    let fixture = h.finish();
    // The real types, in the newest metadata and in every manifest's header.
    let types: HashMap<i64, &str> = HashMap::from([
        (ids["u"] as i64, "unknown"),
        (ids["v"] as i64, "variant"),
        (ids["g"] as i64, "geometry"),
        (ids["st.nu"] as i64, "unknown"),
    ]);
    rewrite_json(&local_path(&fixture.metadata_location), |md| {
        retype(&mut md["schemas"], &types);
        // iceberg-rust 0.10.1 drops nanosecond defaults when it reads its own metadata back
        // (its JSON parser has no case for them), so the commits after the schema change
        // lost them: put them back as the spec writes them.
        for schema in md["schemas"].as_array_mut().unwrap() {
            for f in schema["fields"].as_array_mut().unwrap() {
                let d = match f["name"].as_str() {
                    Some("d_tsns") => "2023-11-14T22:13:20.123456789",
                    Some("d_tstzns") => "1970-01-01T00:00:01.234567891+00:00",
                    _ => continue,
                };
                f["initial-default"] = Value::String(d.into());
                f["write-default"] = Value::String(d.into());
            }
        }
    });
    for m in manifests(&fixture.table_root) {
        rewrite_avro_header(&m, |k, v| {
            if k != "schema" {
                return v;
            }
            let mut s: Value = serde_json::from_slice(&v).unwrap();
            retype(&mut s, &types);
            serde_json::to_vec(&s).unwrap()
        });
    }
    fixture
}

/// `schema` without the fields of these ids (at any depth of structs).
fn drop_ids(schema: &iceberg::spec::Schema, ids: &[i32]) -> iceberg::spec::Schema {
    fn walk(
        fields: &[iceberg::spec::NestedFieldRef],
        ids: &[i32],
    ) -> Vec<iceberg::spec::NestedFieldRef> {
        fields
            .iter()
            .filter(|f| !ids.contains(&f.id))
            .map(|f| match f.field_type.as_ref() {
                Type::Struct(st) => {
                    let mut g = f.as_ref().clone();
                    g.field_type = Box::new(Type::Struct(StructType::new(walk(st.fields(), ids))));
                    Arc::new(g)
                }
                _ => Arc::clone(f),
            })
            .collect()
    }
    iceberg::spec::Schema::builder()
        .with_schema_id(schema.schema_id())
        .with_fields(walk(schema.as_struct().fields(), ids))
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// v1 after partition evolution
// ---------------------------------------------------------------------------------------------

/// A format v1 table (`id long, cat string`) partitioned by `identity(cat)` (S1: one file per
/// value), whose partition field is then removed: v1 keeps it as `{"source-id": 2,
/// "field-id": 1000, "transform": "void", "name": "cat"}` in spec 1 (as Java and pyiceberg
/// write it), and S2 adds one file under spec 1 (partition tuple `[null]`) whose `cat` values
/// are in the file only (`"c"`, `"d"` and null).
pub fn v1_void_partition() -> Fixture {
    let schema = schema_of(vec![
        opt(1, "id", Type::Primitive(PrimitiveType::Long)),
        opt(2, "cat", Type::Primitive(PrimitiveType::String)),
    ]);
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "cat", Transform::Identity)
        .unwrap()
        .build();
    let mut h = Harness::new(
        "v1_void",
        schema,
        Some(spec),
        HashMap::new(),
        FormatVersion::V1,
    );
    let arrow = h.arrow_schema();
    let cats = ["a", "b", "a", "b", "a"];
    let rows1: Vec<Row> = cats
        .iter()
        .enumerate()
        .map(|(i, c)| row(vec![("id", V::I64(i as i64)), ("cat", s(c))]))
        .collect();
    let files = h.write_partitioned(&batch_from_rows(&arrow, &rows1), writer_props(1 << 20));
    let s1 = h.append(files);
    h.expected.insert(s1, batch_from_rows(&arrow, &rows1));
    let old_field = h.table.metadata().default_partition_spec().fields()[0].field_id;
    // Spec 1: the field kept as void, named `cat_void` for iceberg-rust (renamed below).
    let void = UnboundPartitionSpec::builder()
        .with_spec_id(1)
        .add_partition_fields([UnboundPartitionField {
            source_id: 2,
            field_id: Some(old_field),
            name: "cat_void".into(),
            transform: Transform::Void,
        }])
        .unwrap()
        .build();
    h.commit_metadata(|b| b.add_partition_spec(void)?.set_default_partition_spec(-1));
    let spec1 = h.table.metadata().default_partition_spec().as_ref().clone();
    assert_eq!(spec1.spec_id(), 1);
    let rows2 = vec![
        row(vec![("id", V::I64(10)), ("cat", s("c"))]),
        row(vec![("id", V::I64(11)), ("cat", V::Null)]),
        row(vec![("id", V::I64(12)), ("cat", s("d"))]),
    ];
    let key = PartitionKey::new(spec1, h.schema(), Struct::from_iter([None]));
    let f2 = h.write_data(
        &batch_from_rows(&arrow, &rows2),
        Some(key),
        writer_props(1 << 20),
    );
    let (s2, _) = h.commit_snapshot(MAIN_BRANCH, vec![f2], vec![], true, Operation::Append);
    let mut all = rows1;
    all.extend(rows2);
    h.expected.insert(s2, batch_from_rows(&arrow, &all));
    let fixture = h.finish();
    // Now the void field takes its column's name, as v1 writers leave it.
    rewrite_json(&local_path(&fixture.metadata_location), |md| {
        for spec in md["partition-specs"].as_array_mut().unwrap() {
            for f in spec["fields"].as_array_mut().unwrap() {
                if f["name"] == "cat_void" {
                    f["name"] = Value::String("cat".into());
                }
            }
        }
    });
    for m in manifests(&fixture.table_root) {
        rewrite_avro_header(&m, |k, v| match k {
            "partition-spec" | "avro.schema" => String::from_utf8(v)
                .unwrap()
                .replace("\"cat_void\"", "\"cat\"")
                .into_bytes(),
            _ => v,
        });
    }
    fixture
}

// ---------------------------------------------------------------------------------------------
// variant
// ---------------------------------------------------------------------------------------------

/// The value of column `v` of [`v3_variant`]'s row `id`: `None` is SQL NULL,
/// `Some(Value::Null)` the variant null. Objects that fit `v`'s shredding schema
/// ([`v3_variant_shredding`]), objects that fit in part or not at all, arrays, scalars.
pub fn variant_v(id: i64) -> Option<Value> {
    Some(match id.rem_euclid(8) {
        0 => return None,
        1 => serde_json::json!({"a": id, "b": format!("s{id}")}),
        2 => serde_json::json!({"a": id, "c": [1, "x", null, {"d": 1.25}]}),
        3 => serde_json::json!(id),
        4 => serde_json::json!(format!("text {id}")),
        5 => Value::Null,
        6 => serde_json::json!([id, true, 2.5, {"a": "not an int"}]),
        _ => serde_json::json!({"a": "not an int", "b": id, "e": false}),
    })
}

/// The value of `st.w` of [`v3_variant`]'s row `id` (`st` itself is null when `id % 5 == 0`).
pub fn variant_w(id: i64) -> Option<Value> {
    match id.rem_euclid(5) {
        1 => None,
        2 => Some(serde_json::json!({"k": id})),
        3 => Some(Value::Null),
        _ => Some(serde_json::json!(id * 10)),
    }
}

/// The elements of `vl` of [`v3_variant`]'s row `id` (`vl` itself is null when
/// `id % 6 == 0`): `v`'s values of two other rows (SQL NULL elements included).
pub fn variant_vl(id: i64) -> Option<Vec<Option<Value>>> {
    (id % 6 != 0).then(|| vec![variant_v(id + 3), variant_v(id + 29)])
}

/// The shredding schemas (`typed_value` types) of [`v3_variant`]'s shredded file: `v` as an
/// object of `a` (long) and `b` (string), `st.w` as a long.
pub fn v3_variant_shredding() -> (DataType, DataType) {
    let fields = vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ];
    (DataType::Struct(fields.into()), DataType::Int64)
}

/// Append JSON `v` to a variant builder, with parquet-variant's builder: numbers that fit
/// an `i64` as `Int64`, others as `Double`; JSON null as the variant null.
fn append_json(b: &mut impl parquet::variant::VariantBuilderExt, v: &Value) {
    use parquet::variant::{ObjectFieldBuilder, Variant};
    match v {
        Value::Null => b.append_value(Variant::Null),
        Value::Bool(x) => b.append_value(*x),
        Value::Number(n) => match n.as_i64() {
            Some(i) => b.append_value(i),
            None => b.append_value(n.as_f64().expect("a number")),
        },
        Value::String(s) => b.append_value(s.as_str()),
        Value::Array(a) => {
            let mut list = b.new_list();
            for e in a {
                append_json(&mut list, e);
            }
            list.finish();
        }
        Value::Object(o) => {
            let mut object = b.new_object();
            for (k, e) in o {
                append_json(&mut ObjectFieldBuilder::new(k, &mut object), e);
            }
            object.finish();
        }
    }
}

/// A variant column of these values (SQL NULL for `None`), shredded as `shredding` when given
/// (parquet-variant-compute's `shred_variant`), and its field named `name` with field id `id`.
fn variant_column(
    name: &str,
    id: i32,
    values: &[Option<Value>],
    shredding: Option<&DataType>,
) -> (Field, arrow::array::ArrayRef) {
    let mut b = parquet::variant::VariantArrayBuilder::new(values.len());
    for v in values {
        match v {
            None => b.append_null(),
            Some(v) => append_json(&mut b, v),
        }
    }
    let mut array = b.build();
    if let Some(ty) = shredding {
        array = parquet::variant::shred_variant(&array, ty).expect("shred_variant");
    }
    // Optional, with its field id (which replaces the metadata: the extension type again).
    let field = array
        .field(name)
        .with_nullable(true)
        .with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
        .with_extension_type(parquet::variant::VariantType);
    (field, arrow::array::ArrayRef::from(array))
}

/// A format v3 table with `variant` columns, its data files written as the Iceberg spec
/// stores variants in Parquet (a group annotated `VARIANT` holding the `metadata` and `value`
/// binaries, and `typed_value` when shredded, the field id on the group) by parquet's
/// `ArrowWriter`, values built with parquet-variant's builder: `id long required, v variant,
/// st struct<a int, w variant>, vl list<variant>`, unpartitioned, `n` rows per file (two row
/// groups).
///
/// * S1: F1 (ids `0..n`), unshredded, without an `ARROW:schema` hint (as Java writes).
/// * S2: F2 (ids `1000..1000+n`), shredded ([`v3_variant_shredding`]: `v` and `vl`'s
///   elements as an object of `a long, b string`, `st.w` as a long) by
///   parquet-variant-compute's `shred_variant`, with the hint (views).
/// * S3: a deletion vector deleting F2's rows 1 and 3.
///
/// Values: [`variant_v`], [`variant_w`], [`variant_vl`]; `st` is null when `id % 5 == 0`,
/// else `a = id`. `expected[S]` holds the spec's rows with the variant values as their JSON
/// text (serde_json's compact form; null for SQL NULL, `null` for the variant null): schema
/// `id Int64, v Utf8, st Struct<a Int32, w Utf8>, vl List<Utf8>`. iceberg-rust wrote the table with `binary`
/// in place of `variant`; the metadata and manifests' headers are retyped afterwards.
pub fn v3_variant(n: usize) -> Fixture {
    assert!(n >= 8, "every kind of value");
    let bin = || Type::Primitive(PrimitiveType::Binary);
    let schema = schema_of(vec![
        req(1, "id", Type::Primitive(PrimitiveType::Long)),
        opt(2, "v", bin()),
        opt(
            3,
            "st",
            Type::Struct(StructType::new(vec![
                opt(4, "a", Type::Primitive(PrimitiveType::Int)),
                opt(5, "w", bin()),
            ])),
        ),
        opt(
            6,
            "vl",
            Type::List(ListType::new(
                NestedField::list_element(7, bin(), false).into(),
            )),
        ),
    ]);
    let mut h = Harness::new(
        "v3_variant",
        schema,
        None,
        HashMap::new(),
        FormatVersion::V3,
    );
    let ids: HashMap<&str, i32> = ["id", "v", "st", "st.a", "st.w", "vl", "vl.element"]
        .into_iter()
        .map(|n| (n, h.schema().field_by_name(n).unwrap().id))
        .collect();
    let id_meta = |id: i32| HashMap::from([("PARQUET:field_id".to_string(), id.to_string())]);
    let (v_shred, w_shred) = v3_variant_shredding();
    // One data file of ids `first..first + n`.
    let write = |h: &mut Harness, first: i64, shredded: bool| -> (DataFile, RecordBatch) {
        let idv: Vec<i64> = (first..first + n as i64).collect();
        let vs: Vec<Option<Value>> = idv.iter().map(|i| variant_v(*i)).collect();
        let ws: Vec<Option<Value>> = idv.iter().map(|i| variant_w(*i)).collect();
        let (vf, va) = variant_column("v", ids["v"], &vs, shredded.then_some(&v_shred));
        let (wf, wa) = variant_column("w", ids["st.w"], &ws, shredded.then_some(&w_shred));
        let af = Field::new("a", DataType::Int32, true).with_metadata(id_meta(ids["st.a"]));
        let aa: arrow::array::ArrayRef = Arc::new(arrow::array::Int32Array::from(
            idv.iter().map(|i| *i as i32).collect::<Vec<_>>(),
        ));
        let st_nulls: arrow::buffer::NullBuffer = idv.iter().map(|i| i % 5 != 0).collect();
        let st = arrow::array::StructArray::try_new(
            vec![Arc::new(af), Arc::new(wf)].into(),
            vec![aa, wa],
            Some(st_nulls),
        )
        .unwrap();
        // vl: a list of variants (its elements one variant column).
        let lists: Vec<Option<Vec<Option<Value>>>> = idv.iter().map(|i| variant_vl(*i)).collect();
        let elements: Vec<Option<Value>> = lists.iter().flatten().flatten().cloned().collect();
        let (ef, ea) = variant_column(
            "element",
            ids["vl.element"],
            &elements,
            shredded.then_some(&v_shred),
        );
        let lengths = lists.iter().map(|l| l.as_ref().map_or(0, Vec::len));
        let vl = arrow::array::ListArray::try_new(
            Arc::new(ef),
            arrow::buffer::OffsetBuffer::from_lengths(lengths),
            ea,
            Some(lists.iter().map(Option::is_some).collect()),
        )
        .unwrap();
        let fields = vec![
            Field::new("id", DataType::Int64, false).with_metadata(id_meta(ids["id"])),
            vf,
            Field::new("st", st.data_type().clone(), true).with_metadata(id_meta(ids["st"])),
            Field::new("vl", vl.data_type().clone(), true).with_metadata(id_meta(ids["vl"])),
        ];
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(fields)),
            vec![
                Arc::new(Int64Array::from(idv)),
                va,
                Arc::new(st),
                Arc::new(vl),
            ],
        )
        .unwrap();
        let options = ArrowWriterOptions::new().with_skip_arrow_metadata(!shredded);
        let df = write_data_file(h, "variant", &batch, options, None);
        (df, batch)
    };
    // The spec's rows, variants as JSON text.
    let text = |v: Option<Value>| v.map_or(V::Null, |v| V::Str(v.to_string()));
    let expected_rows = |ids: &[i64]| -> Vec<Row> {
        ids.iter()
            .map(|&i| {
                let st = if i % 5 == 0 {
                    V::Null
                } else {
                    V::Struct(row(vec![
                        ("a", V::I32(i as i32)),
                        ("w", text(variant_w(i))),
                    ]))
                };
                let vl =
                    variant_vl(i).map_or(V::Null, |l| V::List(l.into_iter().map(text).collect()));
                row(vec![
                    ("id", V::I64(i)),
                    ("v", text(variant_v(i))),
                    ("st", st),
                    ("vl", vl),
                ])
            })
            .collect()
    };
    let expected_schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
        Field::new(
            "st",
            DataType::Struct(
                vec![
                    Field::new("a", DataType::Int32, true),
                    Field::new("w", DataType::Utf8, true),
                ]
                .into(),
            ),
            true,
        ),
        Field::new(
            "vl",
            DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
            true,
        ),
    ]));
    let f1 = write(&mut h, 0, false);
    let s1 = h.append(vec![f1]);
    let mut live: Vec<i64> = (0..n as i64).collect();
    h.expected
        .insert(s1, batch_from_rows(&expected_schema, &expected_rows(&live)));
    let f2 = write(&mut h, 1000, true);
    let f2_path = f2.0.file_path().to_string();
    let s2 = h.append(vec![f2]);
    live.extend(1000..1000 + n as i64);
    h.expected
        .insert(s2, batch_from_rows(&expected_schema, &expected_rows(&live)));
    let vectors = write_vectors(&mut h, &[(f2_path, vec![1, 3])], Damage::None);
    let deletes = vectors
        .into_iter()
        .map(|(f, rows, offset, length)| (f, rows, Some((offset, length))))
        .collect();
    let s3 = commit_deletes_v3(&mut h, deletes, vec![]);
    live.retain(|i| *i != 1001 && *i != 1003);
    h.expected
        .insert(s3, batch_from_rows(&expected_schema, &expected_rows(&live)));
    let fixture = h.finish();
    let types: HashMap<i64, &str> = HashMap::from([
        (ids["v"] as i64, "variant"),
        (ids["st.w"] as i64, "variant"),
        (ids["vl.element"] as i64, "variant"),
    ]);
    rewrite_json(&local_path(&fixture.metadata_location), |md| {
        retype(&mut md["schemas"], &types)
    });
    for m in manifests(&fixture.table_root) {
        rewrite_avro_header(&m, |k, v| {
            if k != "schema" {
                return v;
            }
            let mut s: Value = serde_json::from_slice(&v).unwrap();
            retype(&mut s, &types);
            serde_json::to_vec(&s).unwrap()
        });
    }
    fixture
}
