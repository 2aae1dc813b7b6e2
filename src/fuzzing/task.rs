//! The `task` fuzz target: a file task as a distributed worker receives it (JSON, the
//! `serde` form the coordinator sends in a work unit), read against a small file of 300 rows.
//!
//! A worker decodes units from the network; after its caller is authenticated, what the
//! unit claims (row groups, a byte range, deleted positions, a size, column sources, name
//! mappings) is still only a claim, and must end in rows or a clean error: no panic in
//! rayquet's own code, no allocation sized by a claim (`-malloc_limit_mb`), no hang.
//!
//! Reference: the file's rows as parquet's reader reads them, less the row groups the task
//! leaves out (its list, and the byte range by row group midpoint, written here from
//! [`crate::FileTask`]'s documentation) and its deleted positions. A task whose columns are
//! the file's must deliver exactly those rows, in order; one with column sources of its own
//! must deliver as many rows; one that names a row group or deletes a position past the
//! file's must fail.

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::task::FileTask;
use crate::ScanBuilder;

/// The file every task reads: 3 row groups of 100 rows (`i`: 0..300, `s`: a string, null on
/// every 7th row), pages of 20 rows with a page index; its schema; parquet's batches.
struct Subject {
    file: Bytes,
    schema: SchemaRef,
    meta: Arc<ParquetMetaData>,
    rows: RecordBatch,
}

fn subject() -> &'static Subject {
    static SUBJECT: OnceLock<Subject> = OnceLock::new();
    SUBJECT.get_or_init(|| {
        let i = Int64Array::from_iter_values(0..300);
        let s =
            StringArray::from_iter((0..300).map(|r| (r % 7 != 0).then(|| format!("v{}", r % 11))));
        let batch = RecordBatch::try_from_iter([
            ("i", Arc::new(i) as Arc<dyn Array>),
            ("s", Arc::new(s) as Arc<dyn Array>),
        ])
        .expect("batch");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_data_page_row_count_limit(20)
            .set_write_batch_size(20)
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        let mut file = Vec::new();
        let mut w = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        let file = Bytes::from(file);
        let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone()).expect("reader");
        let meta = Arc::clone(reader.metadata());
        let schema = Arc::clone(reader.schema());
        let batches: Vec<RecordBatch> = reader
            .with_batch_size(1024)
            .build()
            .expect("reader")
            .collect::<Result<_, _>>()
            .expect("parquet reads its own file");
        let rows = arrow::compute::concat_batches(&schema, &batches).expect("concat");
        Subject {
            file,
            schema,
            meta,
            rows,
        }
    })
}

/// Tasks the target starts from, as JSON: the whole file, row groups, byte ranges, deletes,
/// a size, and column sources of each kind.
pub fn task_seeds() -> Vec<Vec<u8>> {
    use crate::task::ColumnSource;
    let f = subject();
    let base = || FileTask::new("fuzz.parquet");
    let deletes: roaring::RoaringTreemap = (0..300u64).filter(|r| r % 3 == 0).collect();
    let tasks = [
        base(),
        base().size(f.file.len() as u64),
        base().row_groups([2, 0]),
        base().byte_range(0..f.file.len() as u64 / 2),
        base().deletes(deletes),
        base().deleted_rows([5, 150, 299]),
        base().deleted_rows([5, 1 << 40]),
        base().columns([ColumnSource::file(), ColumnSource::Null]),
        base().columns([ColumnSource::RowIndex, ColumnSource::FilePath]),
        base().columns([ColumnSource::constant(7i64), ColumnSource::path(["s"])]),
    ];
    tasks
        .iter()
        .map(|t| serde_json::to_vec(t).expect("a task serializes"))
        .collect()
}

/// The `task` target: `data` as a task's JSON, read against [`subject`]'s file. Panics when
/// the rows are not the reference's, or on a panic in rayquet's own code.
pub fn task(data: &[u8]) {
    let Ok(mut task) = serde_json::from_slice::<FileTask>(data) else {
        return;
    };
    let f = subject();
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("fuzz.parquet");
    {
        use object_store::ObjectStoreExt;
        futures::executor::block_on(store.put(&path, f.file.clone().into())).expect("put");
    }
    task.store = Some((store, path));
    let expected = reference(&task);
    // The file's own columns, matched as the file names them.
    let plain = task.columns.is_none()
        && task.name_mapping.is_none()
        && !task.strict_ids
        && !task.positional_ids;
    let got = crate::Scan::from_tasks(Arc::clone(&f.schema), [task.clone()])
        .memory_budget(4 << 20)
        .batch_size(64)
        .no_footer_cache()
        .build()
        .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(crate::Error::from));
    let batches = match got {
        Ok(b) => b,
        Err(e) => {
            assert!(
                e.kind() != crate::ErrorKind::Panic
                    || e.to_string().contains("/registry/src/")
                    || e.to_string().contains("/rustc/"),
                "task: a panic in rayquet's own code: {e}"
            );
            // A task the file can serve as asked must be served.
            if expected.is_ok() && plain && sized_right(&task) {
                panic!("task {task:?}: an error where the file has the rows: {e}");
            }
            return;
        }
    };
    for b in &batches {
        for c in b.columns() {
            if let Err(e) = c.to_data().validate_full() {
                panic!("task: an invalid {} array: {e}", c.data_type());
            }
        }
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    match expected {
        Err(bad) => panic!("task {task:?}: rows from a task naming {bad}"),
        Ok(keep) if sized_right(&task) => {
            let want = arrow::compute::filter_record_batch(&f.rows, &keep).expect("filter");
            assert_eq!(rows, want.num_rows(), "task {task:?}: rows");
            if plain && rows > 0 {
                let schema = batches[0].schema();
                let got = arrow::compute::concat_batches(&schema, &batches).expect("concat");
                assert!(got == want, "task {task:?}: rows differ from parquet's");
            }
            TASK_COMPARED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        _ => assert!(rows <= f.rows.num_rows(), "task: more rows than the file"),
    }
}

/// The task's size is the file's, or not given (a wrong one may fail or read another tail).
fn sized_right(task: &FileTask) -> bool {
    task.size.is_none_or(|s| s == subject().file.len() as u64)
}

/// Which of the file's rows `task` keeps: `Ok(mask)`, or `Err(what)` for a row group the
/// file does not have or a deleted position past its rows.
fn reference(task: &FileTask) -> Result<BooleanArray, String> {
    let f = subject();
    let groups = f.meta.row_groups();
    if let Some(bad) = task
        .row_groups
        .iter()
        .flatten()
        .find(|&&g| g >= groups.len())
    {
        return Err(format!("row group {bad}"));
    }
    if let Some(max) = task.deletes.as_ref().and_then(|d| d.max()) {
        if max >= f.rows.num_rows() as u64 {
            return Err(format!("deleted position {max}"));
        }
    }
    let mut keep = Vec::with_capacity(f.rows.num_rows());
    let mut first = 0u64;
    for (g, rg) in groups.iter().enumerate() {
        let listed = task.row_groups.as_ref().is_none_or(|l| l.contains(&g));
        let start = rg
            .columns()
            .iter()
            .map(|c| c.dictionary_page_offset().unwrap_or(c.data_page_offset()))
            .min()
            .unwrap_or(0) as u64;
        let mid = start + rg.compressed_size() as u64 / 2;
        let in_range = task.range.as_ref().is_none_or(|r| r.contains(&mid));
        let n = rg.num_rows() as u64;
        for row in first..first + n {
            let deleted = task.deletes.as_ref().is_some_and(|d| d.contains(row));
            keep.push(listed && in_range && !deleted);
        }
        first += n;
    }
    Ok(BooleanArray::from(keep))
}

static TASK_COMPARED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many [`task`] calls in this process compared rows with the reference.
pub fn task_compared() -> usize {
    TASK_COMPARED.load(std::sync::atomic::Ordering::Relaxed)
}
