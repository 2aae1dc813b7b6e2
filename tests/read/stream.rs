//! The scan as an async stream (`ScanReader::into_stream`): the same batches as parquet's
//! reader, polled from one thread that never blocks; cancellation wakes a waiting stream;
//! errors name the file and end the stream. Reference: parquet's sync reader.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema};
use futures::StreamExt;
use rayquet::{ErrorKind, IoTuning, Scan, ScanBuilder};
use rayquet_testkit as common;

use crate::pipeline::{dataset, reference_all};

/// A runtime with one thread: every batch must come while that thread only polls (a stream
/// that blocked its poller would still work on a multi-thread runtime, not here).
fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Ordered and unordered, with decoders parking on a small allowance and budget (so the
/// stream's polls resume them), and with a limit: the rows of parquet's reader.
#[test]
fn stream_equals_reference() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 3, 4, 4000);
    let (schema, expected) = reference_all(&paths, 700);
    let rt = one_thread();
    let scan = |ordered: bool| {
        Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .batch_size(700)
            .ordered(ordered)
            .memory_budget(64 << 10)
            .io_tuning(IoTuning::default().decode_ahead(1).split_bytes(1))
    };
    let collect = |scan: Scan| {
        rt.block_on(async move {
            let stream = scan.build().unwrap().into_stream();
            stream.collect::<Vec<_>>().await
        })
        .into_iter()
        .collect::<Result<Vec<RecordBatch>, _>>()
        .unwrap()
    };
    let got = collect(scan(true));
    common::assert_same_rows(&schema, &expected, &got, "ordered stream");

    let got = collect(scan(false));
    let mut e: Vec<String> = expected.iter().flat_map(common::row_strings).collect();
    let mut g: Vec<String> = got.iter().flat_map(common::row_strings).collect();
    e.sort();
    g.sort();
    assert_eq!(e, g, "unordered stream: the same rows");

    let got = collect(scan(true).limit(10_001));
    let first: Vec<String> = expected
        .iter()
        .flat_map(common::row_strings)
        .take(10_001)
        .collect();
    let g: Vec<String> = got.iter().flat_map(common::row_strings).collect();
    assert_eq!(g, first, "limit: exactly the first rows");
}

/// A stream waiting for a scan that has nothing yet (its tasks never come) is woken by a
/// cancellation from another thread and ends with a `Cancelled` error, then nothing.
#[test]
fn cancelling_wakes_a_waiting_stream() {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let tasks = futures::stream::pending::<rayquet::Result<rayquet::FileTask>>();
    let rt = one_thread();
    rt.block_on(async move {
        let mut stream = Scan::from_task_stream(schema, tasks)
            .build()
            .unwrap()
            .into_stream();
        let waited = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
        assert!(waited.is_err(), "nothing to deliver yet: still pending");
        let canceller = stream.canceller();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            canceller.cancel();
        });
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("woken by the cancellation")
            .expect("an item");
        let err = rayquet::Error::from(item.expect_err("cancelled"));
        assert_eq!(err.kind(), ErrorKind::Cancelled, "{err}");
        assert!(stream.next().await.is_none(), "over after the error");
    });
}

/// A truncated file after a good one: the good file's rows, then an error naming the bad
/// file, then the end, as the iterator gives them.
#[test]
fn stream_errors_name_the_file_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 2, 100);
    let bytes = std::fs::read(&paths[1]).unwrap();
    let truncated = dir.path().join("trunc.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let rt = one_thread();
    rt.block_on(async move {
        let mut stream = Scan::from_urls([paths[0].to_str().unwrap(), truncated.to_str().unwrap()])
            .unwrap()
            .build()
            .unwrap()
            .into_stream();
        let mut rows = 0;
        let err = loop {
            match stream.next().await {
                Some(Ok(b)) => rows += b.num_rows(),
                Some(Err(e)) => break rayquet::Error::from(e),
                None => panic!("expected an error"),
            }
        };
        assert_eq!(rows, 200, "the first file's rows come before the error");
        assert_eq!(err.kind(), ErrorKind::CorruptFooter, "{err}");
        assert!(err.path().unwrap().contains("trunc.parquet"), "{err}");
        assert!(stream.next().await.is_none(), "over after the error");
    });
}
