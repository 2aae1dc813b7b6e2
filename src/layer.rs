//! For crates that build on rayquet: table formats, query engines, bindings. How a scan's
//! [`ScanOptions`] resolve to stores, runtimes and pools; running async work to completion
//! from sync code; listing a dataset. A program that reads files and tables does not need it.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::{layer, Partitioning, ScanBuilder, ScanOptions};
//! let options = ScanOptions::new().store_option("aws_region", "eu-west-1");
//! // A store and path as the scan's own requests would use them.
//! let (store, path) = layer::store_for(&options, "s3://bucket/t/_delta_log/")?;
//! // Async work on the scan's IO runtime, from any thread.
//! let dataset = layer::block_on(&options, {
//!     let options = options.clone();
//!     async move { layer::list_dataset_async(&options, "s3://bucket/t/", &Partitioning::Infer).await }
//! })?;
//! # drop((store, path, dataset)); Ok(()) }
//! ```
//!
//! Invariant: nothing here changes how a scan runs; these functions read the options (or take
//! their query part out, for a layer that plans it itself) and build what a scan would build.

use std::sync::Arc;

use object_store::path::Path;
use object_store::ObjectStore;

use crate::error::Result;
use crate::expr::Expr;
use crate::input::Partitioning;
use crate::options::ScanOptions;

pub use crate::input::{Dataset, DatasetFile};

/// The columns set with [`ScanBuilder::columns`](crate::ScanBuilder::columns) (`None`: all).
pub fn columns(options: &ScanOptions) -> Option<&[String]> {
    options.columns.as_deref()
}

/// The filter set with [`ScanBuilder::filter`](crate::ScanBuilder::filter).
pub fn filter(options: &ScanOptions) -> Option<&Expr> {
    options.filter.as_ref()
}

/// The row limit set with [`ScanBuilder::limit`](crate::ScanBuilder::limit).
pub fn limit(options: &ScanOptions) -> Option<usize> {
    options.limit
}

/// Rows per batch.
pub fn batch_size(options: &ScanOptions) -> usize {
    options.batch_size
}

/// The memory budget (bytes fetched or decoded but not yet delivered).
pub fn memory_budget(options: &ScanOptions) -> usize {
    options.memory_budget
}

/// Take the projection out of the options: a table layer resolves it against the table's
/// schema and gives the scan of its tasks their columns itself.
pub fn take_columns(options: &mut ScanOptions) -> Option<Vec<String>> {
    options.columns.take()
}

/// Take the filter out of the options: a table layer rewrites it in the table's terms
/// before handing it to the scan of its tasks.
pub fn take_filter(options: &mut ScanOptions) -> Option<Expr> {
    options.filter.take()
}

/// The schema a [`union_by_name`](crate::Scan::union_by_name) scan of plain files reads
/// (before partition columns): each file's Arrow schema, with the file's name for errors, folded
/// in order as the scan folds them (columns by name in the order they first appear, a column
/// some file lacks nullable, types widened only where every value converts exactly). A table
/// layer that reads every footer itself gets the scan's schema with it, and each file's tasks
/// then map to it as the scan's files do. A type no widening holds is a `SchemaMismatch`
/// naming the column and both files.
pub fn union_schema<'a>(
    files: impl IntoIterator<Item = (&'a arrow::datatypes::Schema, &'a str)>,
) -> Result<arrow::datatypes::SchemaRef> {
    let mut union = crate::plan::union::Union::default();
    for (schema, name) in files {
        union.add(schema, &Arc::from(name))?;
    }
    Ok(union.schema())
}

pub use crate::input::store_keys::{store_key, StoreKey};

/// The object-store configuration keys and values set with
/// [`ScanBuilder::store_option`](crate::ScanBuilder::store_option).
pub fn store_options(options: &ScanOptions) -> &[(String, String)] {
    &options.store_options
}

/// Put `pairs` before the store options already set, so the caller's own keys win (later
/// keys win): a table layer's defaults, such as the properties a catalog vends with a table.
pub fn default_store_options(options: &mut ScanOptions, pairs: Vec<(String, String)>) {
    let own = std::mem::replace(&mut options.store_options, pairs);
    options.store_options.extend(own);
}

/// The IO runtime scans with these options use: the one given to
/// [`ScanBuilder::io_runtime`](crate::ScanBuilder::io_runtime), else the shared one (2 worker
/// threads, created on first use).
pub fn io_runtime(options: &ScanOptions) -> tokio::runtime::Handle {
    options.io_handle()
}

/// The decode pool scans with these options use: the one given to
/// [`ScanBuilder::decode_pool`](crate::ScanBuilder::decode_pool), else the shared one (a
/// thread per core).
pub fn decode_pool(options: &ScanOptions) -> Arc<rayon::ThreadPool> {
    options.pool()
}

/// Run `fut` on the IO runtime of `options` and wait for its result on this thread, without
/// `block_on` (so it may be called from any thread, even a tokio worker, which it blocks).
/// Table layers plan on the IO runtime from sync code with it.
pub fn block_on<T: Send + 'static>(
    options: &ScanOptions,
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    crate::runtime::block_on_io(&options.io_handle(), fut)
}

/// The object store for `url` (`s3://bucket/...`, `gs://`, `az://`, `file://`, `memory://`
/// or a local path) and the object's path in it, as scans with `options` get theirs: a store
/// given with [`ScanBuilder::object_store`](crate::ScanBuilder::object_store) for the URL's
/// root, else one built from the environment and the store options. A URL's path is
/// percent-decoded. No request is made. Table layers read metadata through the same stores as
/// the data with it.
pub fn store_for(options: &ScanOptions, url: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    crate::input::stores::store_for(options, url, false)
}

/// As [`store_for`], for a location taken literally (see
/// [`FileTask::literal`](crate::FileTask::literal)): `%` escapes are part of the key.
pub fn store_for_literal(
    options: &ScanOptions,
    location: &str,
) -> Result<(Arc<dyn ObjectStore>, Path)> {
    crate::input::stores::store_for(options, location, true)
}

/// The files of the dataset at `url_or_path` (a file, or every `*.parquet` object under a
/// directory or prefix, in lexical order, each with its size when listing gave it) and its
/// Hive partition columns, found as [`Scan::partitioning`](crate::Scan::partitioning) finds
/// them. Lists on the IO runtime and waits.
pub fn list_dataset(
    options: &ScanOptions,
    url_or_path: &str,
    partitioning: &Partitioning,
) -> Result<Dataset> {
    let (o, url, p) = (
        options.clone(),
        url_or_path.to_string(),
        partitioning.clone(),
    );
    block_on(
        options,
        async move { list_dataset_async(&o, &url, &p).await },
    )
}

/// [`list_dataset`] as a future: its requests run on whatever runtime polls it.
pub async fn list_dataset_async(
    options: &ScanOptions,
    url_or_path: &str,
    partitioning: &Partitioning,
) -> Result<Dataset> {
    crate::input::list::dataset(options, url_or_path, partitioning).await
}
