//! A delta-kernel [`Engine`] whose Parquet reads go through rayquet, and whose other handlers
//! (storage, JSON log files, expression evaluation) are the default engine's, running on
//! rayquet's IO runtime: a sync program can drive any kernel API (`Snapshot`,
//! `Scan::execute`, checkpoints) with it. Its log reads check every log JSON file strictly
//! (a damaged commit is an error naming it, never read leniently) and keep the (immutable)
//! files, so the kernel's second pass over them costs no request.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use delta_kernel::Snapshot;
//! use rayquet::ScanOptions;
//! let engine = rayquet_delta::RayquetEngine::for_table("s3://bucket/events/", &ScanOptions::new())?;
//! let snapshot = Snapshot::builder_for("s3://bucket/events/").build(engine.as_ref());
//! # Ok(()) }
//! ```

use std::sync::Arc;

use delta_kernel::{Engine, EvaluationHandler, JsonHandler, ParquetHandler, StorageHandler};
use delta_kernel_default_engine::executor::tokio::TokioMultiThreadExecutor;
use delta_kernel_default_engine::{DefaultEngine, DefaultEngineBuilder};
use object_store::ObjectStore;
use url::Url;

use super::log_cache::LogCache;
use crate::handler::RayquetParquetHandler;
use rayquet::{Error, ErrorKind, Result, ScanBuilder, ScanOptions};

/// A kernel engine reading Parquet with rayquet (see the module docs).
pub struct RayquetEngine {
    inner: DefaultEngine<TokioMultiThreadExecutor>,
    parquet: Arc<RayquetParquetHandler>,
}

impl std::fmt::Debug for RayquetEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RayquetEngine").finish_non_exhaustive()
    }
}

/// The table root as a URL (a local directory becomes `file:///...`), ending in `/`.
pub fn table_url(location: &str) -> Result<Url> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(location)
    };
    let mut url = match Url::parse(location) {
        Ok(u) if u.scheme().len() > 1 => u,
        _ => {
            let p = std::path::Path::new(location);
            let abs = std::fs::canonicalize(p).map_err(|e| {
                let kind = match e.kind() {
                    std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                    _ => ErrorKind::Io,
                };
                Error::new(kind, e.to_string()).with_path(location)
            })?;
            Url::from_directory_path(&abs).map_err(|_| bad(&"not a directory path"))?
        }
    };
    if !url.path().ends_with('/') {
        url.set_path(&format!("{}/", url.path()));
    }
    Ok(url)
}

impl RayquetEngine {
    /// An engine for the table at `location` (a URL or a local directory): the default
    /// engine's handlers over the table's store, on the IO runtime of `options`, with
    /// rayquet's Parquet handler scanning with `options`. The table's store is the one
    /// `options` gives for its URL root ([`ScanBuilder::object_store`], e.g. a test store or
    /// one that models latency; a store for `file://` must be rooted at `/`), else one built
    /// from the environment and the store options.
    pub fn for_table(location: &str, options: &ScanOptions) -> Result<Arc<Self>> {
        let url = table_url(location)?;
        let (store, _) = rayquet::layer::store_for(options, url.as_str())?;
        Ok(Self::build(&url, store, options))
    }

    /// The engine of [`RayquetEngine::for_table`] over `store` for the table's root.
    pub(crate) fn build(
        url: &Url,
        store: Arc<dyn ObjectStore>,
        options: &ScanOptions,
    ) -> Arc<Self> {
        let io = rayquet::layer::io_runtime(options);
        let executor = Arc::new(TokioMultiThreadExecutor::new(io));
        // Log reads keep the commit files, which the kernel reads twice per scan.
        let root = format!("{}://{}", url.scheme(), url.authority());
        let rewritten = crate::nanos::Rewritten::default();
        let log: Arc<dyn ObjectStore> = Arc::new(LogCache::new(
            Arc::clone(&store),
            root.clone(),
            rewritten.clone(),
        ));
        let inner = DefaultEngineBuilder::new(log)
            .with_task_executor(executor)
            .build();
        let scans = options.clone().object_store(root, store);
        let parquet = Arc::new(
            RayquetParquetHandler::new(scans, inner.default_parquet_handler())
                .with_rewritten(rewritten),
        );
        Arc::new(RayquetEngine { inner, parquet })
    }

    /// The rayquet Parquet handler of this engine.
    pub fn rayquet_parquet_handler(&self) -> Arc<RayquetParquetHandler> {
        Arc::clone(&self.parquet)
    }
}

impl Engine for RayquetEngine {
    fn evaluation_handler(&self) -> Arc<dyn EvaluationHandler> {
        self.inner.evaluation_handler()
    }

    fn storage_handler(&self) -> Arc<dyn StorageHandler> {
        self.inner.storage_handler()
    }

    fn json_handler(&self) -> Arc<dyn JsonHandler> {
        self.inner.json_handler()
    }

    fn parquet_handler(&self) -> Arc<dyn ParquetHandler> {
        self.parquet.clone()
    }
}
