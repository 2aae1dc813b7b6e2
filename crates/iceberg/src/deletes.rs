//! Iceberg deletes as rayquet task hooks.
//!
//! *Position deletes* become each data file's deleted rows ([`TaskDeletes`], a
//! [`DeleteLoader`]): the delete files are read while the data file's footer is fetched, and
//! their positions turn into row selections, so deleted rows are never delivered and not
//! decoded where the page index lets the reader skip them.
//!
//! *Equality deletes* become a [`RowFilter`] ([`EqualityDeletes`]): the delete rows' key
//! columns (evolved to the table's types) go into a hash set (of `i64` for one integer-like
//! key column, else of arrow row-format encodings), and each data row is looked up once:
//! O(N + M), not a predicate per deleted row. A null key matches a null, and only a null (the
//! Iceberg spec's equality). The key columns of a data file are produced like its output
//! columns: a partition constant, or the initial default when the file lacks the column. Which delete files apply to which
//! data file, by partition and sequence number, is the planner's decision.
//!
//! Invariant: each delete file is read once per scan, however many data files it applies
//! to ([`DeleteFiles`] shares the loads); an unreadable delete file is an error naming it,
//! never silently no deletes.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::row::{RowConverter, SortField};
use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};
use iceberg::io::FileIO;
use iceberg::metadata_columns::{
    RESERVED_FIELD_ID_DELETE_FILE_PATH, RESERVED_FIELD_ID_DELETE_FILE_POS,
};
use iceberg::spec::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use rayquet::task::{
    ColumnSource, DeleteLoader, LoadContext, RoaringTreemap, RowFilter, FIELD_ID_KEY,
};
use rayquet::{Error, ErrorKind, Result};

use crate::dv::{DeletionVector, Registry, Vectors};

type Load<T> = Shared<BoxFuture<'static, Result<Arc<T>>>>;

/// Deleted positions by data file path, from one position-delete file.
type Positions = HashMap<String, RoaringTreemap>;

/// An equality-delete file and the field ids it is read on.
type EqKey = (String, Vec<i32>);

/// The delete files of one scan, each loaded once.
pub(crate) struct DeleteFiles {
    file_io: FileIO,
    /// Deletion vectors (format v3), each Puffin file read about once.
    pub vectors: Vectors,
    positions: Mutex<HashMap<String, Load<Positions>>>,
    equalities: Mutex<HashMap<EqKey, Load<KeySet>>>,
}

impl std::fmt::Debug for DeleteFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeleteFiles")
    }
}

fn delete_error(path: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("reading {what} delete file: {e}")).with_path(path)
}

/// A delete file that was read but cannot be decoded.
fn corrupt(path: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::CorruptData, format!("{what} delete file: {e}")).with_path(path)
}

impl DeleteFiles {
    pub fn new(file_io: FileIO, vectors: Registry) -> Self {
        DeleteFiles {
            vectors: Vectors::new(file_io.clone(), vectors),
            file_io,
            positions: Mutex::default(),
            equalities: Mutex::default(),
        }
    }

    async fn bytes(file_io: &FileIO, path: &str, what: &str) -> Result<Bytes> {
        let input = file_io
            .new_input(path)
            .map_err(|e| delete_error(path, what, e))?;
        input.read().await.map_err(|e| delete_error(path, what, e))
    }

    /// The positions a position-delete file deletes, by data file path.
    fn positions(&self, path: &str, ctx: &LoadContext) -> Load<Positions> {
        let mut map = self.positions.lock().expect("deletes lock");
        let load = map
            .entry(path.to_string())
            .or_insert_with(|| self.load(path, "position", ctx, read_positions));
        load.clone()
    }

    /// The key set of an equality-delete file on `ids`, in the types of `fields`.
    fn keys(&self, path: &str, fields: Vec<(i32, FieldRef)>, ctx: &LoadContext) -> Load<KeySet> {
        let ids: Vec<i32> = fields.iter().map(|(i, _)| *i).collect();
        let mut map = self.equalities.lock().expect("deletes lock");
        let load = map.entry((path.to_string(), ids)).or_insert_with(|| {
            self.load(path, "equality", ctx, move |bytes, p| {
                read_keys(bytes, p, &fields)
            })
        });
        load.clone()
    }

    /// Read the `what`-delete file at `path` once (its bytes on the IO runtime) and parse it
    /// with `parse` on the decode pool; errors name the file.
    fn load<T: Send + Sync + 'static>(
        &self,
        path: &str,
        what: &'static str,
        ctx: &LoadContext,
        parse: impl FnOnce(Bytes, &str) -> Result<T> + Send + 'static,
    ) -> Load<T> {
        let (io, path, ctx) = (self.file_io.clone(), path.to_string(), ctx.clone());
        async move {
            let bytes = Self::bytes(&io, &path, what).await?;
            let p = path.clone();
            let r = ctx.spawn_cpu(move || parse(bytes, &p)).await;
            r.map(Arc::new).map_err(|e| match e.path() {
                Some(_) => e,
                None => e.with_path(path.clone()),
            })
        }
        .boxed()
        .shared()
    }
}

/// Find a column of a delete file: by field id, else by name.
fn find_column(schema: &arrow::datatypes::Schema, id: i32, name: &str) -> Option<usize> {
    let by_id = schema.fields().iter().position(|f| {
        f.metadata()
            .get(FIELD_ID_KEY)
            .and_then(|v| v.parse::<i32>().ok())
            == Some(id)
    });
    by_id.or_else(|| schema.fields().iter().position(|f| f.name() == name))
}

fn read_positions(bytes: Bytes, path: &str) -> Result<Positions> {
    let bad = |e: &dyn std::fmt::Display| corrupt(path, "position", e);
    if bytes.starts_with(b"PFA1") {
        // A deletion vector's Puffin file in a task planned without its manifest entry (its
        // offset and length are not in a FileScanTask).
        return Err(Error::new(
            ErrorKind::Unsupported,
            "a Puffin file (Iceberg v3 deletion vectors) attached as a position-delete file: \
             deletion vectors are read by rayquet_iceberg::TableScan, which reads their \
             manifest entries, not from FileScanTasks planned elsewhere",
        )
        .with_path(path));
    }
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| bad(&e))?;
    let schema = Arc::clone(builder.schema());
    let file_col = find_column(&schema, RESERVED_FIELD_ID_DELETE_FILE_PATH, "file_path")
        .ok_or_else(|| bad(&"no file_path column"))?;
    let pos_col = find_column(&schema, RESERVED_FIELD_ID_DELETE_FILE_POS, "pos")
        .ok_or_else(|| bad(&"no pos column"))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [file_col, pos_col]);
    let (fi, pi) = if file_col < pos_col { (0, 1) } else { (1, 0) };
    let reader = builder
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| bad(&e))?;
    let mut out: Positions = HashMap::new();
    for batch in reader {
        let batch = batch.map_err(|e| bad(&e))?;
        let files = arrow::compute::cast(batch.column(fi), &DataType::Utf8).map_err(|e| bad(&e))?;
        let pos = arrow::compute::cast(batch.column(pi), &DataType::Int64).map_err(|e| bad(&e))?;
        let (files, pos) = (
            files.as_string::<i32>(),
            pos.as_primitive::<arrow::datatypes::Int64Type>(),
        );
        if files.null_count() > 0 || pos.null_count() > 0 {
            return Err(bad(&"null file_path or pos"));
        }
        if let Some(p) = pos.values().iter().find(|&&p| p < 0) {
            return Err(bad(&format!("negative position {p}")));
        }
        // The spec sorts a delete file by path, then position: take each run of one path at
        // once (one lookup per run, positions appended a container at a time); any other order
        // still gives the same sets.
        let mut i = 0;
        while i < batch.num_rows() {
            let f = files.value(i);
            let end = (i + 1..batch.num_rows())
                .find(|&j| files.value(j) != f)
                .unwrap_or(batch.num_rows());
            let run = pos.values()[i..end].iter().map(|&p| p as u64);
            if !out.contains_key(f) {
                out.insert(f.to_string(), RoaringTreemap::new());
            }
            let set = out.get_mut(f).expect("inserted above");
            if let Err(e) = set.append(run.clone()) {
                set.extend(run.skip(e.valid_until() as usize));
            }
            i = end;
        }
    }
    Ok(out)
}

/// The keys of an equality-delete file: integers (one integer-like key column: the common
/// case of an `id`), or arrow row-format encodings (anything else). A NULL key is a key like
/// any other: it matches NULL, and only NULL.
pub(crate) enum KeySet {
    /// One key column of an integer-like type (int, long, date, time, timestamp), as `i64`.
    Ints {
        keys: HashSet<i64, BuildHasherDefault<IntHasher>>,
        null: bool,
    },
    /// Any key columns, encoded with arrow's row format.
    Rows {
        converter: RowConverter,
        keys: HashSet<Box<[u8]>>,
    },
}

/// A multiplicative hasher for `i64` keys (SipHash costs more than the lookup itself).
#[derive(Default)]
pub(crate) struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Whether a key column of this type is read as `i64` ([`KeySet::Ints`]).
fn int_like(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Time64(_)
            | DataType::Timestamp(..)
    )
}

/// `a` (an integer-like column) as `Int64` values.
fn as_i64(a: &ArrayRef) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    match a.data_type() {
        DataType::Int64 => Ok(Arc::clone(a)),
        DataType::Timestamp(..) | DataType::Time64(_) => {
            // Same width: reinterpret.
            let d = a
                .to_data()
                .into_builder()
                .data_type(DataType::Int64)
                .build()?;
            Ok(arrow::array::make_array(d))
        }
        _ => arrow::compute::cast(a, &DataType::Int64),
    }
}

impl KeySet {
    fn new(fields: &[(i32, FieldRef)]) -> std::result::Result<KeySet, arrow::error::ArrowError> {
        if let [(_, f)] = fields {
            if int_like(f.data_type()) {
                return Ok(KeySet::Ints {
                    keys: HashSet::default(),
                    null: false,
                });
            }
        }
        Ok(KeySet::Rows {
            converter: RowConverter::new(
                fields
                    .iter()
                    .map(|(_, f)| SortField::new(f.data_type().clone()))
                    .collect(),
            )?,
            keys: HashSet::new(),
        })
    }

    /// Add the keys of these columns (typed like the key fields).
    fn insert(
        &mut self,
        columns: &[ArrayRef],
    ) -> std::result::Result<(), arrow::error::ArrowError> {
        match self {
            KeySet::Ints { keys, null } => {
                let a = as_i64(&columns[0])?;
                let a = a.as_primitive::<arrow::datatypes::Int64Type>();
                for v in a.iter() {
                    match v {
                        Some(v) => {
                            keys.insert(v);
                        }
                        None => *null = true,
                    }
                }
            }
            KeySet::Rows { converter, keys } => {
                let rows = converter.convert_columns(columns)?;
                for r in rows.iter() {
                    keys.insert(Box::from(r.as_ref()));
                }
            }
        }
        Ok(())
    }

    fn len(&self) -> usize {
        match self {
            KeySet::Ints { keys, null } => keys.len() + usize::from(*null),
            KeySet::Rows { keys, .. } => keys.len(),
        }
    }

    /// Clear `keep[i]` for each row whose key is in the set.
    fn apply(
        &self,
        columns: &[ArrayRef],
        keep: &mut [bool],
    ) -> std::result::Result<(), arrow::error::ArrowError> {
        match self {
            KeySet::Ints { keys, null } => {
                let a = as_i64(&columns[0])?;
                let a = a.as_primitive::<arrow::datatypes::Int64Type>();
                if a.null_count() == 0 {
                    for (k, v) in keep.iter_mut().zip(a.values()) {
                        *k &= !keys.contains(v);
                    }
                } else {
                    for (k, v) in keep.iter_mut().zip(a.iter()) {
                        *k &= !match v {
                            Some(v) => keys.contains(&v),
                            None => *null,
                        };
                    }
                }
            }
            KeySet::Rows { converter, keys } => {
                let rows = converter.convert_columns(columns)?;
                for (k, r) in keep.iter_mut().zip(rows.iter()) {
                    *k &= !keys.contains(r.as_ref());
                }
            }
        }
        Ok(())
    }
}

fn read_keys(bytes: Bytes, path: &str, fields: &[(i32, FieldRef)]) -> Result<KeySet> {
    let bad = |e: &dyn std::fmt::Display| corrupt(path, "equality", e);
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| bad(&e))?;
    let schema = Arc::clone(builder.schema());
    let cols: Vec<usize> = fields
        .iter()
        .map(|(id, f)| {
            find_column(&schema, *id, f.name())
                .ok_or_else(|| bad(&format!("no column for field id {id} ({})", f.name())))
        })
        .collect::<Result<_>>()?;
    let mut roots = cols.clone();
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| bad(&e))?;
    let mut keys = KeySet::new(fields).map_err(|e| bad(&e))?;
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| bad(&e))?;
        let arrays: Vec<ArrayRef> = cols
            .iter()
            .zip(fields)
            .map(|(c, (_, f))| {
                let k = roots.iter().position(|r| r == c).expect("projected");
                arrow::compute::cast(batch.column(k), f.data_type()).map_err(|e| bad(&e))
            })
            .collect::<Result<_>>()?;
        keys.insert(&arrays).map_err(|e| bad(&e))?;
    }
    Ok(keys)
}

/// A data file's equality deletes: rows whose key is in any of its delete files' sets are
/// dropped.
pub(crate) struct EqualityDeletes {
    /// The key columns, by field id, as the table types them, and how the data file
    /// produces each (a partition constant, a default...).
    columns: Vec<(i32, FieldRef)>,
    sources: Vec<ColumnSource>,
    /// Per delete file: its key columns (indices into `columns`) and path.
    files: Vec<(Vec<usize>, String)>,
    sets: OnceLock<Vec<Arc<KeySet>>>,
}

impl std::fmt::Debug for EqualityDeletes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EqualityDeletes")
            .field("files", &self.files)
            .finish()
    }
}

impl EqualityDeletes {
    /// Equality deletes from `files` (path and equality field ids) over the fields of
    /// `schema` (the table's, as of the scanned snapshot), each produced from the data file
    /// as `source` says.
    pub fn new(
        files: Vec<(String, Vec<i32>)>,
        schema: &Schema,
        source: &dyn Fn(i32) -> ColumnSource,
    ) -> Result<Self> {
        let mut columns: Vec<(i32, FieldRef)> = Vec::new();
        let mut sources = Vec::new();
        let mut out = Vec::new();
        for (path, ids) in files {
            let mut idx = Vec::new();
            for id in ids {
                let k = match columns.iter().position(|(i, _)| *i == id) {
                    Some(k) => k,
                    None => {
                        let field = schema.field_by_id(id).ok_or_else(|| {
                            Error::new(
                                ErrorKind::SchemaMismatch,
                                format!("equality field id {id} is not in the table's schema"),
                            )
                            .with_path(path.clone())
                        })?;
                        let ty = iceberg::arrow::type_to_arrow_type(&field.field_type)
                            .map_err(|e| Error::new(ErrorKind::SchemaMismatch, e.to_string()))?;
                        let f = Field::new(&field.name, ty, true)
                            .with_metadata([(FIELD_ID_KEY.to_string(), id.to_string())].into());
                        columns.push((id, Arc::new(f)));
                        sources.push(source(id));
                        columns.len() - 1
                    }
                };
                idx.push(k);
            }
            out.push((idx, path));
        }
        Ok(EqualityDeletes {
            columns,
            sources,
            files: out,
            sets: OnceLock::new(),
        })
    }
}

impl RowFilter for EqualityDeletes {
    fn columns(&self) -> Vec<(FieldRef, ColumnSource)> {
        self.columns
            .iter()
            .zip(&self.sources)
            .map(|((_, f), s)| (Arc::clone(f), s.clone()))
            .collect()
    }

    fn keep(&self, columns: &[ArrayRef]) -> Result<BooleanArray> {
        let sets = self.sets.get().ok_or_else(|| {
            Error::new(ErrorKind::Io, "equality deletes were not loaded before use")
        })?;
        let n = columns.first().map_or(0, |c| c.len());
        let mut keep = vec![true; n];
        for ((idx, path), set) in self.files.iter().zip(sets) {
            if set.len() == 0 {
                continue;
            }
            let arrays: Vec<ArrayRef> = idx.iter().map(|&k| Arc::clone(&columns[k])).collect();
            set.apply(&arrays, &mut keep)
                .map_err(|e| delete_error(path, "equality", e))?;
        }
        Ok(BooleanArray::from(keep))
    }
}

/// Loads one data file's deletes: its positions from the position-delete files, and the key
/// sets of its equality deletes.
pub(crate) struct TaskDeletes {
    pub files: Arc<DeleteFiles>,
    pub data_file: String,
    /// The data file's rows, when known (bounds of its deletion vector).
    pub rows: Option<u64>,
    pub positions: Vec<String>,
    pub vector: Option<DeletionVector>,
    pub equality: Option<Arc<EqualityDeletes>>,
}

impl std::fmt::Debug for TaskDeletes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskDeletes")
            .field("data_file", &self.data_file)
            .field("positions", &self.positions)
            .field("vector", &self.vector)
            .finish()
    }
}

impl DeleteLoader for TaskDeletes {
    fn load(&self, ctx: LoadContext) -> BoxFuture<'static, Result<RoaringTreemap>> {
        let positions: Vec<_> = self
            .positions
            .iter()
            .map(|p| self.files.positions(p, &ctx))
            .collect();
        let keys: Vec<_> = match &self.equality {
            Some(eq) => eq
                .files
                .iter()
                .map(|(idx, p)| {
                    let fields = idx.iter().map(|&k| eq.columns[k].clone()).collect();
                    self.files.keys(p, fields, &ctx)
                })
                .collect(),
            None => Vec::new(),
        };
        let vector = self
            .vector
            .as_ref()
            .map(|dv| self.files.vectors.load(dv, self.rows, &ctx));
        let (data_file, equality) = (self.data_file.clone(), self.equality.clone());
        async move {
            let mut out = match vector {
                Some(v) => v.await?.as_ref().clone(),
                None => RoaringTreemap::new(),
            };
            for p in futures::future::try_join_all(positions).await? {
                if let Some(set) = p.get(&data_file) {
                    out |= set;
                }
            }
            if let Some(eq) = equality {
                let sets = futures::future::try_join_all(keys).await?;
                let _ = eq.sets.set(sets);
            }
            Ok(out)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};

    fn field(t: DataType) -> (i32, FieldRef) {
        (1, Arc::new(Field::new("k", t, true)))
    }

    /// Rows kept by a set built from `deletes` (one column per key field).
    fn kept(fields: &[(i32, FieldRef)], deletes: &[ArrayRef], data: &[ArrayRef]) -> Vec<bool> {
        let mut set = KeySet::new(fields).unwrap();
        set.insert(deletes).unwrap();
        let mut keep = vec![true; data[0].len()];
        set.apply(data, &mut keep).unwrap();
        keep
    }

    /// Position deletes against a reference built one row at a time: runs of a path across
    /// batch boundaries (64k rows), paths coming back, positions out of order and repeated.
    #[test]
    fn position_deletes_in_any_order() {
        use arrow::array::Int64Array;
        use parquet::arrow::ArrowWriter;
        use std::collections::{BTreeMap, BTreeSet};

        let mut rows: Vec<(&str, i64)> = Vec::new();
        rows.extend((0..90_000).map(|p| ("s3://b/a.parquet", p * 3)));
        rows.extend((0..1_000).map(|p| ("s3://b/b.parquet", p)));
        rows.extend([("s3://b/a.parquet", 7), ("s3://b/a.parquet", 1 << 33)]);
        rows.extend([
            ("s3://b/b.parquet", 5),
            ("s3://b/b.parquet", 2),
            ("s3://b/c.parquet", 0),
        ]);
        let batch = RecordBatch::try_from_iter([
            (
                "file_path",
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
            ),
            (
                "pos",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut bytes = Vec::new();
        let mut w = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();

        let got = read_positions(Bytes::from(bytes), "deletes.parquet").unwrap();
        let mut want: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
        for (f, p) in &rows {
            want.entry(f).or_default().insert(*p as u64);
        }
        assert_eq!(got.len(), want.len());
        for (f, set) in want {
            assert!(got[f].iter().eq(set.iter().copied()), "{f}");
        }
    }

    #[test]
    fn null_keys_match_null_only() {
        // One integer key: the i64 set.
        let f = [field(DataType::Int32)];
        let deletes: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), None]));
        let data: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), None, Some(4), Some(3)]));
        assert!(matches!(KeySet::new(&f).unwrap(), KeySet::Ints { .. }));
        assert_eq!(
            kept(&f, &[deletes], std::slice::from_ref(&data)),
            [false, false, true, false]
        );
        let no_null: ArrayRef = Arc::new(Int32Array::from(vec![3]));
        assert_eq!(kept(&f, &[no_null], &[data]), [false, true, true, false]);
        // Two keys (row format): (NULL, 'y') deletes only rows whose first key is NULL.
        let f = [
            field(DataType::Int32),
            (2, Arc::new(Field::new("s", DataType::Utf8, true))),
        ];
        let k1: ArrayRef = Arc::new(Int32Array::from(vec![None, Some(5)]));
        let k2: ArrayRef = Arc::new(StringArray::from(vec![Some("y"), Some("x")]));
        let d1: ArrayRef = Arc::new(Int32Array::from(vec![
            None,
            Some(1),
            Some(5),
            None,
            Some(5),
        ]));
        let d2: ArrayRef = Arc::new(StringArray::from(vec![
            Some("y"),
            Some("y"),
            None,
            Some("z"),
            Some("x"),
        ]));
        assert_eq!(
            kept(&f, &[k1, k2], &[d1, d2]),
            [false, true, true, true, false]
        );
    }
}
