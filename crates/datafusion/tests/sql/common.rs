//! Shared by the tests of rayquet-datafusion: running SQL, the reference (DataFusion over the
//! batches of an independent reader in a `MemTable`), rows as a multiset, and a cluster of
//! workers on loopback ports, each on a runtime of its own (so that killing one closes its
//! connections, as a crash would).

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use rayquet::ScanOptions;
use rayquet_datafusion::{datafusion, RayquetTable, WorkerStats};
use rayquet_testkit::gen::{generate, Compression, GenOptions};
use rayquet_testkit::iceberg_tables::Fixture;
use url::Url;

/// Every query in these tests ends within this, or the test fails (never hangs).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(120);

/// Run `sql` and collect its batches, within [`QUERY_TIMEOUT`].
pub async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    let query = async { ctx.sql(sql).await?.collect().await };
    tokio::time::timeout(QUERY_TIMEOUT, query)
        .await
        .unwrap_or_else(|_| panic!("query did not finish in {QUERY_TIMEOUT:?}: {sql}"))
}

/// The physical plan of `sql`.
pub async fn plan_of(
    ctx: &SessionContext,
    sql: &str,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

/// Run a physical plan of `ctx` and collect its batches, within [`QUERY_TIMEOUT`].
pub async fn run_plan(
    ctx: &SessionContext,
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Vec<RecordBatch> {
    let run = datafusion::physical_plan::collect(Arc::clone(plan), ctx.task_ctx());
    tokio::time::timeout(QUERY_TIMEOUT, run)
        .await
        .expect("hung")
        .unwrap()
}

/// [`run`] that must succeed.
pub async fn rows_of(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    sorted_rows(&batches)
}

/// Every row rendered as text, sorted (a multiset; Utf8 and Utf8View render alike). Fractional
/// numbers are compared to 12 significant digits: a float `sum` depends on the order rows are
/// added in, which differs between two correct plans.
pub fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut rows: Vec<String> = batches
        .iter()
        .flat_map(rayquet_testkit::row_strings)
        .map(|row| {
            row.split('|')
                .map(|field| match field.parse::<f64>() {
                    Ok(x) if field.contains('.') => format!("{x:.11e}"),
                    _ => field.to_string(),
                })
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    rows.sort();
    rows
}

/// A session holding `batches` (of `schema`) as table `name`: the reference DataFusion runs
/// the same SQL on.
pub fn reference(name: &str, schema: SchemaRef, batches: Vec<RecordBatch>) -> SessionContext {
    let ctx = SessionContext::new();
    add_reference(&ctx, name, schema, batches);
    ctx
}

/// A session holding the rows of `files` (in that order), read by parquet's own reader, as
/// table `name`.
pub fn reference_files(name: &str, files: &[std::path::PathBuf]) -> SessionContext {
    let mut batches = Vec::new();
    let mut schema = None;
    for f in files {
        let (s, b) = rayquet_testkit::reference(f, None, 1024).expect("reference read");
        schema = Some(s);
        batches.extend(b);
    }
    reference(name, schema.expect("files"), batches)
}

/// Add `batches` as table `name` of a reference session.
pub fn add_reference(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) {
    let batches: Vec<RecordBatch> = batches
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(struct_nulls_into_fields)
        .collect();
    let table = MemTable::try_new(schema, vec![batches]).expect("MemTable");
    ctx.register_table(name, Arc::new(table))
        .expect("register reference");
}

/// `batch` with every top-level struct's nulls also in its fields, as a Parquet reader gives
/// them. Arrays built in memory may keep values under a null struct, and DataFusion's
/// `s['a']` reads the field as it is, so the reference would see values that SQL says are
/// NULL.
fn struct_nulls_into_fields(batch: RecordBatch) -> RecordBatch {
    use datafusion::arrow::array::{make_array, Array, AsArray, StructArray};
    use datafusion::arrow::buffer::NullBuffer;
    let columns = batch
        .columns()
        .iter()
        .map(|c| match c.as_struct_opt() {
            Some(s) if s.null_count() > 0 => {
                let fields = s
                    .columns()
                    .iter()
                    .map(|f| {
                        let nulls = NullBuffer::union(s.nulls(), f.nulls());
                        let data = f.to_data().into_builder().nulls(nulls).build();
                        make_array(data.expect("field with the struct's nulls"))
                    })
                    .collect();
                let s = StructArray::new(s.fields().clone(), fields, s.nulls().cloned());
                Arc::new(s) as _
            }
            _ => Arc::clone(c),
        })
        .collect();
    RecordBatch::try_new(batch.schema(), columns).expect("same schema")
}

/// Assert that `sql` gives the same rows on `actual` and `expected` (as multisets).
pub async fn assert_same(actual: &SessionContext, expected: &SessionContext, sql: &str) -> usize {
    let want = rows_of(expected, sql).await;
    let got = rows_of(actual, sql).await;
    assert_eq!(got.len(), want.len(), "{sql}: row count");
    assert!(
        got == want,
        "{sql}: rows differ\n got: {:?}\nwant: {:?}",
        head(&got),
        head(&want)
    );
    got.len()
}

fn head(rows: &[String]) -> Vec<&String> {
    rows.iter().take(10).collect()
}

/// One worker on a loopback port, on a tokio runtime of its own.
pub struct WorkerHandle {
    pub url: Url,
    pub stats: Arc<WorkerStats>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl WorkerHandle {
    /// Start a worker reading with `options`.
    pub fn start(options: ScanOptions) -> WorkerHandle {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-worker")
            .enable_all()
            .build()
            .expect("worker runtime");
        // Bound here, registered with the worker's runtime (`block_on` is not allowed inside
        // the test's own runtime).
        let std_listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let port = std_listener.local_addr().expect("local addr").port();
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener).expect("tokio listener")
        };
        let (worker, stats) = rayquet_datafusion::worker(options);
        runtime.spawn(async move {
            if let Err(e) = rayquet_datafusion::serve_worker(listener, worker).await {
                eprintln!("worker on port {port} stopped: {e}");
            }
        });
        WorkerHandle {
            url: Url::parse(&format!("http://127.0.0.1:{port}")).expect("url"),
            stats,
            runtime: Some(runtime),
        }
    }

    /// Stop the worker at once, as a crash would: its listener and every connection close.
    pub fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `n` workers reading with `options`.
pub fn cluster(n: usize, options: ScanOptions) -> Vec<WorkerHandle> {
    (0..n)
        .map(|_| WorkerHandle::start(options.clone()))
        .collect()
}

/// The files each worker has read so far.
pub fn files_read(workers: &[WorkerHandle]) -> Vec<Vec<String>> {
    workers.iter().map(|w| w.stats.files()).collect()
}

/// The files read since `before` (from [`files_read`]), by worker.
pub fn files_since(workers: &[WorkerHandle], before: &[Vec<String>]) -> Vec<Vec<String>> {
    workers
        .iter()
        .zip(before)
        .map(|(w, b)| w.stats.files()[b.len()..].to_vec())
        .collect()
}

/// A URL where nothing listens (a port bound, then released).
pub fn dead_url() -> Url {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    Url::parse(&format!("http://127.0.0.1:{port}")).expect("url")
}

/// The rayquet table of the Iceberg fixture `fx` (at its current snapshot); panics naming the
/// fixture if it cannot be opened.
pub fn iceberg_table(fx: &Fixture) -> RayquetTable {
    RayquetTable::iceberg(rayquet_iceberg::TableScan::open(
        fx.metadata_location.as_str(),
    ))
    .unwrap_or_else(|e| panic!("{}: {e}", fx.name))
}

/// A new temporary directory of `files` lineitem-like files (`rayquet-gen`, snappy), each of
/// `row_groups` row groups of `rows` rows, from `seed`; with the options that made them.
pub fn lineitem_dir(
    files: usize,
    row_groups: usize,
    rows: usize,
    seed: u64,
) -> (tempfile::TempDir, GenOptions) {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        files,
        row_groups,
        rows_per_row_group: rows,
        compression: Compression::Snappy,
        seed,
    };
    generate(dir.path(), &opts).unwrap();
    (dir, opts)
}
