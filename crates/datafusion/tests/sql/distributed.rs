//! Distributed queries: three rayquet workers on loopback ports in this process (each on a
//! tokio runtime of its own), a datafusion-distributed coordinator whose tables refuse to scan
//! locally. Results equal the single-process rayquet scan plus DataFusion over the same
//! batches; every worker scans, every data file is read exactly once; a worker killed
//! mid-query, a missing data file and an unreachable worker each end the query with a clean
//! error.

use std::sync::Arc;

use crate::common::*;
use rayquet::{ScanBuilder, ScanOptions};
use rayquet_datafusion::datafusion::arrow::array::RecordBatch;
use rayquet_datafusion::datafusion::physical_plan::ExecutionPlan;
use rayquet_datafusion::datafusion::prelude::SessionContext;
use rayquet_datafusion::{
    collect_distributed, distributed_session, name_failed_workers, RayquetTable, WorkerScan,
};
use url::Url;

fn urls(workers: &[WorkerHandle]) -> Vec<Url> {
    workers.iter().map(|w| w.url.clone()).collect()
}

/// Register the Parquet dataset in `dir` as table `name` of `ctx`, scanned only on workers.
fn remote_parquet(ctx: &SessionContext, name: &str, dir: &tempfile::TempDir) {
    let table = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
        .unwrap()
        .require_remote(true);
    ctx.register_table(name, Arc::new(table)).unwrap();
}

/// Register each Parquet dataset as its table in `reference` (read here) and in `ctx` (read
/// only on workers).
fn register_both(
    reference: &SessionContext,
    ctx: &SessionContext,
    tables: &[(&str, &tempfile::TempDir)],
) {
    for (name, dir) in tables {
        let path = dir.path().to_str().unwrap();
        let table = RayquetTable::parquet(path, ScanOptions::new()).unwrap();
        reference
            .register_table(*name, Arc::new(table.clone()))
            .unwrap();
        ctx.register_table(*name, Arc::new(table.require_remote(true)))
            .unwrap();
    }
}

/// Run `sql` on the cluster (within the test timeout), check it against `reference`, and
/// return what each worker scanned and the files each read.
async fn distributed_matches(
    ctx: &SessionContext,
    workers: &[WorkerHandle],
    reference: &SessionContext,
    sql: &str,
) -> (Vec<WorkerScan>, Vec<Vec<String>>) {
    let before = files_read(workers);
    let urls = urls(workers);
    let run = collect_distributed(ctx, sql, &urls);
    let (batches, scans) = tokio::time::timeout(QUERY_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| panic!("{sql}: no answer in {QUERY_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let want = rows_of(reference, sql).await;
    let got = sorted_rows(&batches);
    assert_eq!(got.len(), want.len(), "{sql}: row count");
    assert!(
        got == want,
        "{sql}: rows differ from the single-process answer"
    );
    (scans, files_since(workers, &before))
}

/// Every worker scanned at least one unit, the coordinator's report agrees with the workers'
/// own counters, and the files read are `files`, each exactly once.
fn every_worker_once_each(sql: &str, scans: &[WorkerScan], read: &[Vec<String>], files: &[String]) {
    let all = every_worker_each_file(sql, scans, read, files);
    let mut want = files.to_vec();
    want.sort();
    assert_eq!(all, want, "{sql}: files read (each exactly once)");
}

/// Every worker scanned at least one unit, the coordinator's report agrees with the workers'
/// own counters, and the files read are `files`, each at least once (a file larger than a
/// unit is read by several, each its own row groups: the rows, compared with the reference's
/// as a multiset, show none twice). Returns the files read, one entry per unit, sorted.
fn every_worker_each_file(
    sql: &str,
    scans: &[WorkerScan],
    read: &[Vec<String>],
    files: &[String],
) -> Vec<String> {
    for (scan, files) in scans.iter().zip(read) {
        assert!(
            scan.units >= 1,
            "{sql}: worker {} scanned nothing",
            scan.worker
        );
        assert_eq!(
            scan.units,
            files.len() as u64,
            "{sql}: the coordinator's count for {} differs from the worker's",
            scan.worker
        );
    }
    let mut all: Vec<String> = read.iter().flatten().cloned().collect();
    all.sort();
    let mut distinct = all.clone();
    distinct.dedup();
    let mut want = files.to_vec();
    want.sort();
    assert_eq!(distinct, want, "{sql}: files read");
    all
}

/// The batches of a single-process rayquet scan.
fn collect(reader: rayquet::ScanReader) -> Vec<RecordBatch> {
    reader
        .collect::<Result<Vec<_>, _>>()
        .expect("single-process scan")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_on_three_workers() {
    use rayquet_testkit::iceberg_tables as it;
    let mut cut = Vec::new();
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    let cases: Vec<(it::Fixture, Vec<&str>)> = vec![
        (
            it::partitioned_identity(60),
            vec![
                "SELECT * FROM t",
                "SELECT cat, region, day, count(*), sum(v), min(id), max(id) FROM t GROUP BY 1, 2, 3",
                "SELECT region, count(*) FROM t WHERE v > 10 GROUP BY 1",
            ],
        ),
        (
            it::evolution(50),
            vec![
                "SELECT * FROM t",
                "SELECT with_default, count(*), sum(a), sum(dec), min(full_name), max(added) \
                 FROM t GROUP BY 1",
            ],
        ),
        (
            it::deletes(60, 10),
            vec![
                "SELECT * FROM t",
                "SELECT k1, k2, count(*), min(id), max(v) FROM t GROUP BY 1, 2",
            ],
        ),
    ];
    for (fx, queries) in cases {
        let table = iceberg_table(&fx).require_remote(true);
        ctx.deregister_table("t").unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        // The single-process answer: rayquet's own scan of the table, in a MemTable.
        let scan = rayquet_iceberg::TableScan::from_table(fx.table.clone());
        let schema = scan.output_schema().unwrap();
        let reference = reference("t", schema, collect(scan.build().unwrap()));
        // ... which is the spec's answer.
        let want = fx.expected_current();
        let spec = crate::common::reference("t", want.schema(), vec![want]);
        assert_same(&reference, &spec, "SELECT * FROM t").await;
        let files: Vec<String> = it::plan_tasks(&fx.table, None, None, None, true)
            .into_iter()
            .map(|t| t.data_file_path)
            .collect();
        for sql in queries {
            let (scans, read) = distributed_matches(&ctx, &workers, &reference, sql).await;
            let all = every_worker_each_file(&format!("{}: {sql}", fx.name), &scans, &read, &files);
            // Fewer files than the 6 partitions of 3 workers: files are cut into runs of row
            // groups (units below the file), as far as their row groups allow.
            if all.len() > files.len() {
                cut.push(fx.name.to_string());
            }
        }
    }
    // Deletes count rows of the whole file: the cut files' rows show they still do.
    assert!(cut.iter().any(|c| c == "deletes"), "cut: {cut:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_tables_on_three_workers() {
    use rayquet_testkit::delta_tables as dt;
    let mut cut = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    let cases: Vec<(dt::Fixture, Vec<&str>)> = vec![
        (
            dt::dv_fixture(&dir.path().join("dv")),
            vec![
                "SELECT * FROM t",
                "SELECT name IS NULL, count(*), sum(score), min(id), max(id) FROM t GROUP BY 1",
            ],
        ),
        (
            dt::column_mapping_fixture(&dir.path().join("cm"), "name"),
            vec![
                "SELECT * FROM t",
                "SELECT extra IS NULL, count(*), sum(s['a']), min(name) FROM t GROUP BY 1",
            ],
        ),
        (
            dt::column_mapping_fixture(&dir.path().join("cm-id"), "id"),
            vec!["SELECT * FROM t"],
        ),
    ];
    for (fx, queries) in cases {
        let table = RayquetTable::delta(rayquet_delta::TableScan::open(fx.url.as_str()))
            .unwrap()
            .require_remote(true);
        ctx.deregister_table("t").unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let scan = rayquet_delta::TableScan::open(fx.url.as_str());
        let schema = scan.clone().plan().unwrap().plan.output_schema().unwrap();
        let reference = reference("t", schema, collect(scan.build().unwrap()));
        let want = fx.expected();
        let spec = crate::common::reference("t", want.schema.clone(), want.batches.clone());
        assert_same(&reference, &spec, "SELECT * FROM t").await;
        let files: Vec<String> = dt::scan_files(&fx.url, &dt::ReadOptions::default())
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        for sql in queries {
            let (scans, read) = distributed_matches(&ctx, &workers, &reference, sql).await;
            let all = every_worker_each_file(&format!("{}: {sql}", fx.name), &scans, &read, &files);
            // Fewer files than the 6 partitions of 3 workers: files are cut into runs of row
            // groups (units below the file), as far as their row groups allow.
            if all.len() > files.len() {
                cut.push(fx.name.to_string());
            }
        }
    }
    // Deletion vectors count rows of the whole file: the cut files' rows show they still do.
    assert!(cut.iter().any(|c| c == "dv"), "cut: {cut:?}");
    assert!(
        cut.iter().any(|c| c.starts_with("column-mapping")),
        "cut: {cut:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_prefix_on_s3_on_three_workers() {
    use rayquet_testkit::gen::{file_name, generate, Compression, GenOptions};
    use rayquet_testkit::s3::S3;
    let s3 = S3::get();
    const SECRET: &str = "rayquet-secret-that-never-travels";
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        files: 6,
        row_groups: 2,
        rows_per_row_group: 3_000,
        compression: Compression::Zstd,
        seed: 3,
    };
    let paths = generate(dir.path(), &opts).unwrap();
    s3.create_bucket("lake");
    let mut objects: Vec<(String, Vec<u8>)> = (0..opts.files)
        .map(|i| {
            (
                format!("lineitem/{}", file_name(i)),
                std::fs::read(&paths[i]).unwrap(),
            )
        })
        .collect();
    objects.push(("lineitem/_SUCCESS".into(), vec![]));
    s3.upload("lake", &objects);
    // Every process configures its own store (the workers here share the environment).
    let options = ScanOptions::new()
        .store_option("aws_endpoint", &s3.endpoint)
        .store_option("aws_allow_http", "true")
        .store_option("aws_region", "us-east-1")
        .store_option("aws_access_key_id", "test")
        .store_option("aws_secret_access_key", SECRET);
    let workers = cluster(3, options.clone());
    let ctx = distributed_session(urls(&workers), options.clone()).unwrap();
    let table = RayquetTable::parquet("s3://lake/lineitem/", options.clone())
        .unwrap()
        .require_remote(true);
    ctx.register_table("t", Arc::new(table)).unwrap();

    // The single-process answer: rayquet's own scan of the prefix, views as the table has them.
    let reader = s3
        .scan("s3://lake/lineitem/")
        .unwrap()
        .string_views(true)
        .build()
        .unwrap();
    let schema = reader.schema();
    let reference = reference("t", schema, collect(reader));
    let files: Vec<String> = (0..opts.files)
        .map(|i| format!("s3://lake/lineitem/{}", file_name(i)))
        .collect();
    for sql in [
        "SELECT * FROM t",
        "SELECT l_returnflag, l_linestatus, count(*), sum(l_quantity), avg(l_discount) FROM t GROUP BY 1, 2",
        "SELECT l_shipmode, count(*) FROM t WHERE l_quantity < 10 AND l_tax IS NOT NULL GROUP BY 1",
    ] {
        let (scans, read) = distributed_matches(&ctx, &workers, &reference, sql).await;
        every_worker_once_each(sql, &scans, &read, &files);
    }

    // What travels to workers holds no credentials.
    use rayquet_datafusion::datafusion_proto::physical_plan::PhysicalExtensionCodec;
    let plan = ctx
        .sql("SELECT * FROM t WHERE l_quantity < 10")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let nodes = rayquet_datafusion::scan_nodes(&plan);
    assert!(!nodes.is_empty());
    for node in nodes {
        let mut buf = Vec::new();
        rayquet_datafusion::RayquetCodec::new(options.clone())
            .try_encode(node as Arc<dyn ExecutionPlan>, &mut buf)
            .unwrap();
        let text = String::from_utf8_lossy(&buf);
        assert!(text.contains("l_quantity"), "the node is encoded");
        assert!(
            !text.contains(SECRET) && !text.contains(&s3.endpoint),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_query_ends_it_cleanly() {
    use futures::StreamExt;
    let (dir, opts) = lineitem_dir(9, 2, 40_000, 5);
    let mut workers = cluster(3, ScanOptions::new());
    let urls = urls(&workers);
    let ctx = distributed_session(urls.clone(), ScanOptions::new()).unwrap();
    remote_parquet(&ctx, "t", &dir);
    let sql = "SELECT l_orderkey, l_linenumber, l_comment FROM t";
    let query = async {
        let mut stream = ctx.sql(sql).await?.execute_stream().await?;
        let mut batches = Vec::new();
        // The query is under way: a batch has arrived.
        if let Some(first) = stream.next().await {
            batches.push(first?);
        }
        workers[1].kill();
        while let Some(b) = stream.next().await {
            batches.push(b?);
        }
        Ok::<_, rayquet_datafusion::datafusion::error::DataFusionError>(batches)
    };
    let outcome = tokio::time::timeout(QUERY_TIMEOUT, query)
        .await
        .expect("the query hung after a worker was killed");
    match outcome {
        Err(e) => {
            let e = name_failed_workers(e, &urls).await;
            let msg = e.to_string();
            assert!(
                msg.contains(urls[1].as_str()),
                "the error does not name the killed worker {}: {msg}",
                urls[1]
            );
        }
        // The killed worker had finished its part: then every row is there, once.
        Ok(batches) => {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(rows as u64, opts.total_rows(), "rows lost or duplicated");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_data_file_on_a_worker_is_a_clean_error() {
    use rayquet_testkit::iceberg_tables as it;
    let fx = it::missing_data_file();
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    let table = iceberg_table(&fx).require_remote(true);
    ctx.register_table("t", Arc::new(table)).unwrap();
    let urls = urls(&workers);
    let run = collect_distributed(&ctx, "SELECT * FROM t", &urls);
    let err = tokio::time::timeout(QUERY_TIMEOUT, run)
        .await
        .expect("hung")
        .expect_err("a data file is missing");
    let victim = &fx.removed_files[0];
    let name = victim.rsplit('/').next().unwrap();
    assert!(
        err.to_string().contains(name),
        "the error does not name {victim}: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_worker_is_a_clean_error_naming_it() {
    let (dir, _) = lineitem_dir(3, 1, 1_000, 1);
    let workers = cluster(2, ScanOptions::new());
    let dead = dead_url();
    let mut all = urls(&workers);
    all.push(dead.clone());
    let ctx = distributed_session(all.clone(), ScanOptions::new()).unwrap();
    remote_parquet(&ctx, "t", &dir);
    let run = collect_distributed(&ctx, "SELECT count(*), sum(l_quantity) FROM t", &all);
    let err = tokio::time::timeout(QUERY_TIMEOUT, run)
        .await
        .expect("hung")
        .expect_err("a worker is unreachable");
    let msg = err.to_string();
    assert!(
        msg.contains(dead.as_str()),
        "the error does not name {dead}: {msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_worker_still_scans_remotely() {
    let (dir, opts) = lineitem_dir(3, 2, 1_000, 2);
    let workers = cluster(1, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    remote_parquet(&ctx, "t", &dir);
    // A sum is not in the footers' statistics (a bare count(*) would be): the rows are read.
    let sql = "SELECT count(*), sum(l_linenumber) > 0 FROM t";
    let (batches, scans) = collect_distributed(&ctx, sql, &urls(&workers))
        .await
        .unwrap();
    assert_eq!(
        sorted_rows(&batches),
        vec![format!("{}|true", opts.total_rows())]
    );
    assert_eq!(scans[0].units, 3);
    assert_eq!(scans[0].rows, opts.total_rows());
}

/// With datafusion-distributed's broadcast joins off, a stage holding a join that collects its
/// build side runs in one task, on the coordinator; a rayquet scan on the join's probe side
/// still runs on the workers (gathered into that stage), and the join's rows are right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_without_broadcast_still_scan_on_workers() {
    use rayquet_datafusion::datafusion::physical_plan::displayable;
    let (big, big_opts) = lineitem_dir(3, 2, 2_000, 5);
    let (small, _) = lineitem_dir(1, 1, 50, 6);
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    let reference = rayquet_datafusion::local_session();
    register_both(&reference, &ctx, &[("t", &big), ("s", &small)]);
    let sql = "SELECT t.l_returnflag, count(*), sum(t.l_quantity) FROM s JOIN t \
               ON s.l_orderkey = t.l_orderkey AND s.l_linenumber = t.l_linenumber GROUP BY 1";
    for broadcast in [true, false] {
        ctx.sql(&format!("SET distributed.broadcast_joins = {broadcast}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await;
        let text = format!("{}", displayable(plan.unwrap().as_ref()).indent(false));
        assert!(text.contains("mode=CollectLeft"), "{text}");
        let (scans, _) = distributed_matches(&ctx, &workers, &reference, sql).await;
        for scan in &scans {
            assert!(
                scan.units >= 1,
                "broadcast {broadcast}: worker {} scanned nothing",
                scan.worker
            );
        }
        let rows: u64 = scans.iter().map(|s| s.rows).sum();
        assert!(
            rows >= big_opts.total_rows(),
            "broadcast {broadcast}: {rows} rows scanned"
        );
    }
}

/// A distributed session broadcasts a join's build side that DataFusion's single-process
/// default (1 MiB, 128 Ki rows) would hash-partition, up to [`BROADCAST_BYTES`]: the larger
/// side is not shuffled, the rows are the single-process answer's, and a session's `SET` of
/// DataFusion's default brings the partitioned join back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_broadcast_a_build_side_below_the_threshold() {
    use rayquet_datafusion::datafusion::physical_plan::displayable;
    use rayquet_datafusion::datafusion::prelude::SessionConfig;
    use rayquet_datafusion::{BROADCAST_BYTES, BROADCAST_ROWS};
    // The build side: 150 Ki rows of two keys (12 bytes a row: 1.7 MiB as DataFusion
    // estimates it), above DataFusion's default and below the distributed session's.
    let (big, _) = lineitem_dir(2, 2, 76_800, 11);
    let (small, _) = lineitem_dir(1, 2, 76_800, 12);
    let build_bytes = 2 * 76_800 * 12;
    assert!(build_bytes > 1 << 20 && build_bytes < BROADCAST_BYTES && 2 * 76_800 < BROADCAST_ROWS);
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    let reference = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    register_both(&reference, &ctx, &[("t", &big), ("s", &small)]);
    let set = |sql: &'static str| {
        let ctx = ctx.clone();
        async move { ctx.sql(sql).await.unwrap().collect().await.unwrap() }
    };
    set("SET datafusion.execution.target_partitions = 2").await;
    let sql = "SELECT t.l_returnflag, count(*), sum(t.l_quantity) FROM s JOIN t \
               ON s.l_orderkey = t.l_orderkey AND s.l_linenumber = t.l_linenumber GROUP BY 1";
    let mode = |ctx: SessionContext| async move {
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await;
        let text = format!("{}", displayable(plan.unwrap().as_ref()).indent(false));
        match (
            text.contains("mode=CollectLeft"),
            text.contains("mode=Partitioned"),
        ) {
            (true, false) => "CollectLeft",
            (false, true) => "Partitioned",
            _ => panic!("one join expected:\n{text}"),
        }
    };
    assert_eq!(mode(reference.clone()).await, "Partitioned");
    assert_eq!(mode(ctx.clone()).await, "CollectLeft");
    assert!(!rows_of(&reference, sql).await.is_empty());
    distributed_matches(&ctx, &workers, &reference, sql).await;
    set("SET datafusion.optimizer.hash_join_single_partition_threshold = 1048576").await;
    set("SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 131072").await;
    assert_eq!(mode(ctx.clone()).await, "Partitioned");
    distributed_matches(&ctx, &workers, &reference, sql).await;
}

/// `EXPLAIN ANALYZE` runs the query on the workers too: what each worker scanned is counted
/// for it as for the query itself (the plan's root is then DataFusion's `AnalyzeExec`, with
/// the distributed plan below it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_counts_what_each_worker_scanned() {
    let (dir, opts) = lineitem_dir(3, 2, 1_000, 7);
    let workers = cluster(3, ScanOptions::new());
    let ctx = distributed_session(urls(&workers), ScanOptions::new()).unwrap();
    remote_parquet(&ctx, "t", &dir);
    let sql = "SELECT l_returnflag, sum(l_linenumber) FROM t GROUP BY 1";
    let (_, plain) = collect_distributed(&ctx, sql, &urls(&workers))
        .await
        .unwrap();
    let (batches, analyzed) =
        collect_distributed(&ctx, &format!("EXPLAIN ANALYZE {sql}"), &urls(&workers))
            .await
            .unwrap();
    let text = format!(
        "{}",
        rayquet_datafusion::datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
    );
    assert!(text.contains("RayquetScanExec"), "{text}");
    let units = |scans: &[WorkerScan]| scans.iter().map(|s| s.units).sum::<u64>();
    assert!(units(&plain) >= 3, "{plain:?}");
    assert_eq!(units(&analyzed), units(&plain), "{analyzed:?}\n{text}");
    for scans in [&plain, &analyzed] {
        assert_eq!(scans.iter().map(|s| s.rows).sum::<u64>(), opts.total_rows());
        assert!(scans.iter().all(|s| s.units >= 1), "{scans:?}");
    }
}
