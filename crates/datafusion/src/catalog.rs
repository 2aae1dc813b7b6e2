//! A whole Iceberg catalog as a DataFusion catalog (feature `catalog`, with rayquet-iceberg's
//! `rest` or `sql-catalog`): `SELECT ... FROM lake.sales.orders`, a namespace a schema (a
//! nested one dotted and quoted: `lake."sales.eu".orders`), each table a [`RayquetTable`].
//!
//! Nothing is listed or loaded up front: namespaces and tables are listed when DataFusion asks
//! for their names (`SHOW TABLES`, `information_schema`), and a table is loaded when a query
//! names it, on a blocking thread (never on DataFusion's runtime threads). A table a query
//! names that the catalog does not have is DataFusion's own "table not found"; any other
//! failure of the catalog is the query's error, naming the catalog and table.
//!
//! ```no_run
//! # async fn f() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use rayquet::ScanOptions;
//! use rayquet_datafusion::IcebergCatalog;
//! use rayquet_iceberg::catalog::CatalogConfig;
//! let ctx = rayquet_datafusion::local_session();
//! let config = CatalogConfig::load("lake")
//!     .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
//! ctx.register_catalog("lake", Arc::new(IcebergCatalog::new(config, ScanOptions::new())));
//! let df = ctx.sql("SELECT count(*) FROM lake.sales.orders").await?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};
use rayquet::{ScanBuilder, ScanOptions};
use rayquet_iceberg::catalog::{is_missing_table, CatalogConfig};

use crate::RayquetTable;

/// An Iceberg catalog's namespaces and tables, for DataFusion (see the module doc).
#[derive(Debug, Clone)]
pub struct IcebergCatalog {
    config: CatalogConfig,
    options: ScanOptions,
    require_remote: bool,
}

impl IcebergCatalog {
    /// The catalog `config`, its tables read with `options` (stores, budget...).
    pub fn new(config: CatalogConfig, options: ScanOptions) -> Self {
        IcebergCatalog {
            config,
            options,
            require_remote: false,
        }
    }

    /// Its tables' scans run only on workers ([`RayquetTable::require_remote`]).
    pub fn require_remote(mut self, yes: bool) -> Self {
        self.require_remote = yes;
        self
    }
}

impl CatalogProvider for IcebergCatalog {
    /// The catalog's namespaces; none when it cannot be listed (the error is the query's when
    /// a table is named).
    fn schema_names(&self) -> Vec<String> {
        self.config.namespaces(&self.options).unwrap_or_default()
    }

    /// The namespace `name`, not checked here: its tables are looked up when named.
    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        Some(Arc::new(Namespace {
            catalog: self.clone(),
            name: name.to_string(),
        }))
    }
}

/// One namespace of an [`IcebergCatalog`].
#[derive(Debug)]
struct Namespace {
    catalog: IcebergCatalog,
    name: String,
}

#[async_trait]
impl SchemaProvider for Namespace {
    fn table_names(&self) -> Vec<String> {
        let c = &self.catalog;
        c.config.tables(&self.name, &c.options).unwrap_or_default()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let c = self.catalog.clone();
        let table = format!("{}.{name}", self.name);
        let load = move || -> rayquet::Result<RayquetTable> {
            let scan =
                rayquet_iceberg::TableScan::from_catalog(c.config, table).with_options(c.options);
            Ok(RayquetTable::iceberg_inner(scan)?.require_remote(c.require_remote))
        };
        match tokio::task::spawn_blocking(load).await {
            Ok(Ok(t)) => Ok(Some(Arc::new(t))),
            Ok(Err(e)) if is_missing_table(&e) => Ok(None),
            Ok(Err(e)) => Err(DataFusionError::External(Box::new(e))),
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.table_names().iter().any(|t| t == name)
    }
}
