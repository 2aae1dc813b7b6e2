//! Smoke test of the Iceberg reader against iceberg-rust's own `to_arrow()` on a small table
//! written with iceberg-rust (the full suite is tests/iceberg.rs).
use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use futures::TryStreamExt;
use iceberg::io::LocalFsStorageFactory;
use iceberg::memory::{MemoryCatalogBuilder, MEMORY_CATALOG_WAREHOUSE};
use iceberg::spec::{DataFileFormat, NestedField, PrimitiveType, Schema, Type};
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::{Catalog, CatalogBuilder, NamespaceIdent, Runtime, TableCreation};
use parquet::file::properties::WriterProperties;

#[test]
fn small_table_reads_like_to_arrow() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let table = rt.block_on(async {
        let catalog = MemoryCatalogBuilder::default()
            .with_storage_factory(Arc::new(LocalFsStorageFactory))
            .with_runtime(Runtime::new(&rt))
            .load(
                "mem",
                HashMap::from([(
                    MEMORY_CATALOG_WAREHOUSE.to_string(),
                    format!("file://{}", dir.path().display()),
                )]),
            )
            .await
            .unwrap();
        let ns = NamespaceIdent::new("ns".into());
        catalog.create_namespace(&ns, HashMap::new()).await.unwrap();
        let schema = Schema::builder()
            .with_schema_id(0)
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .unwrap();
        let table = catalog
            .create_table(
                &ns,
                TableCreation::builder()
                    .name("t".into())
                    .schema(schema)
                    .build(),
            )
            .await
            .unwrap();
        let schema = table.metadata().current_schema().clone();
        let arrow_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema).unwrap());
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(25))
            .build();
        let pw = ParquetWriterBuilder::new(props, schema.clone());
        let rolling = RollingFileWriterBuilder::new_with_default_file_size(
            pw,
            table.file_io().clone(),
            DefaultLocationGenerator::new(table.metadata()).unwrap(),
            DefaultFileNameGenerator::new("data".into(), None, DataFileFormat::Parquet),
        );
        let mut w = DataFileWriterBuilder::new(rolling)
            .build(None)
            .await
            .unwrap();
        let ids: Vec<i64> = (0..100).collect();
        let names: Vec<Option<String>> = ids
            .iter()
            .map(|i| (i % 7 != 0).then(|| format!("n{i}")))
            .collect();
        let batch = RecordBatch::try_new(
            arrow_schema,
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap();
        w.write(batch).await.unwrap();
        let files = w.close().await.unwrap();
        let tx = Transaction::new(&table);
        let tx = tx.fast_append().add_data_files(files).apply(tx).unwrap();
        tx.commit(&catalog).await.unwrap()
    });
    let expected: Vec<RecordBatch> = rt.block_on(async {
        table
            .scan()
            .build()
            .unwrap()
            .to_arrow()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    });
    // Through the table object, and through load_table on its location.
    let schema = expected[0].schema();
    let want = common::concat(&schema, &expected);
    let got: Vec<RecordBatch> = rayquet_iceberg::TableScan::from_table(table.clone())
        .to_scan()
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(got[0].schema(), schema);
    common::suite::assert_rows_eq(&want, &common::concat(&schema, &got), "table");
    let location = table.metadata().location().to_string();
    let loaded = rayquet_iceberg::load_table(&location, &rayquet::ScanOptions::new()).unwrap();
    let got: Vec<RecordBatch> = rayquet_iceberg::TableScan::from_table(loaded)
        .columns(["name", "_file", "id", "_pos"])
        .to_scan()
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 100);
    drop(rt);
}
