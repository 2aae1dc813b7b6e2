//! The three ways to start a scan (`scan`, `iceberg`, `delta`), and the options they share,
//! applied through rayquet's `ScanBuilder` exactly as from Rust. The Python layer
//! (`rayquet/__init__.py`) documents them and normalises paths before calling these.

use std::collections::HashMap;

use pyo3::prelude::*;
use rayquet::{ErrorKind, Expr, Scan, ScanBuilder};

use crate::errors::{new_err, to_py};
use crate::reader::{build_interruptibly, Reader};

/// The `ScanBuilder` options every function takes.
struct Common {
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<usize>,
    batch_size: Option<usize>,
    ordered: bool,
    storage_options: Option<HashMap<String, String>>,
    memory_budget: Option<usize>,
    string_views: bool,
    memory_map: bool,
    verify_checksums: bool,
}

impl Common {
    /// `builder` with these options.
    fn apply<B: ScanBuilder>(self, mut b: B) -> PyResult<B> {
        if let Some(columns) = self.columns {
            b = b.columns(columns);
        }
        if let Some(sql) = self.filter {
            b = b.filter(Expr::parse_sql(&sql).map_err(|e| to_py(&e))?);
        }
        if let Some(limit) = self.limit {
            b = b.limit(limit);
        }
        if let Some(n) = self.batch_size {
            if n == 0 {
                return Err(new_err(
                    ErrorKind::InvalidArgument,
                    "batch_size must be positive",
                ));
            }
            b = b.batch_size(n);
        }
        if let Some(bytes) = self.memory_budget {
            b = b.memory_budget(bytes);
        }
        let mut options: Vec<_> = self
            .storage_options
            .unwrap_or_default()
            .into_iter()
            .collect();
        options.sort();
        for (k, v) in options {
            b = b.store_option(k, v);
        }
        Ok(b.ordered(self.ordered)
            .string_views(self.string_views)
            .memory_map(self.memory_map)
            .verify_checksums(self.verify_checksums))
    }
}

/// A scan of Parquet files, directories or prefixes (`paths`: local paths or URLs, in order).
#[pyfunction]
#[pyo3(signature = (paths, columns=None, filter=None, limit=None, batch_size=None, ordered=true,
    storage_options=None, *, memory_budget=None, string_views=false, memory_map=false,
    row_index=None, verify_checksums=true, union_by_name=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan(
    py: Python<'_>,
    paths: Vec<String>,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<usize>,
    batch_size: Option<usize>,
    ordered: bool,
    storage_options: Option<HashMap<String, String>>,
    memory_budget: Option<usize>,
    string_views: bool,
    memory_map: bool,
    row_index: Option<String>,
    verify_checksums: bool,
    union_by_name: bool,
) -> PyResult<Reader> {
    let common = Common {
        columns,
        filter,
        limit,
        batch_size,
        ordered,
        storage_options,
        memory_budget,
        string_views,
        memory_map,
        verify_checksums,
    };
    let mut scan = common.apply(Scan::from_urls(&paths).map_err(|e| to_py(&e))?)?;
    if let Some(name) = row_index {
        scan = scan.row_index(name);
    }
    let scan = scan.union_by_name(union_by_name);
    build_interruptibly(py, move || scan.build())
}

/// A scan of the Iceberg table at `location` (its directory or a metadata JSON file).
#[pyfunction]
#[pyo3(signature = (location, snapshot_id=None, r#ref=None, columns=None, filter=None,
    limit=None, batch_size=None, ordered=true, storage_options=None, *, as_of_timestamp=None,
    case_sensitive=true, memory_budget=None, string_views=false, memory_map=false,
    verify_checksums=true, catalog=None, catalog_properties=None, file_io_properties=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn iceberg(
    py: Python<'_>,
    location: String,
    snapshot_id: Option<i64>,
    r#ref: Option<String>,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<usize>,
    batch_size: Option<usize>,
    ordered: bool,
    storage_options: Option<HashMap<String, String>>,
    as_of_timestamp: Option<i64>,
    case_sensitive: bool,
    memory_budget: Option<usize>,
    string_views: bool,
    memory_map: bool,
    verify_checksums: bool,
    catalog: Option<String>,
    catalog_properties: Option<HashMap<String, String>>,
    file_io_properties: Option<HashMap<String, String>>,
) -> PyResult<Reader> {
    // A pyiceberg table's FileIO properties (catalog settings among them: only the storage
    // ones are kept), under the caller's storage options.
    let mut storage: Vec<(String, String)> = file_io_properties
        .map(|p| rayquet_iceberg::storage::store_options(&p))
        .unwrap_or_default();
    storage.sort();
    let common = Common {
        columns,
        filter,
        limit,
        batch_size,
        ordered,
        storage_options,
        memory_budget,
        string_views,
        memory_map,
        verify_checksums,
    };
    let table = match catalog {
        Some(name) => {
            use rayquet_iceberg::catalog::CatalogConfig;
            let props = catalog_properties.unwrap_or_default();
            let config = CatalogConfig::load_with(&name, props).map_err(|e| to_py(&e))?;
            rayquet_iceberg::TableScan::from_catalog(config, location)
        }
        None => rayquet_iceberg::TableScan::open(location),
    };
    let table = storage
        .into_iter()
        .fold(table, |t, (k, v)| t.store_option(k, v));
    let mut scan = common.apply(table)?.case_sensitive(case_sensitive);
    if let Some(id) = snapshot_id {
        scan = scan.snapshot_id(id);
    }
    if let Some(name) = r#ref {
        scan = scan.reference(name);
    }
    if let Some(millis) = as_of_timestamp {
        scan = scan.as_of_timestamp(millis);
    }
    build_interruptibly(py, move || scan.build())
}

/// A scan of the Delta table at `location` (its root directory or URL, above `_delta_log`).
#[pyfunction]
#[pyo3(signature = (location, version=None, columns=None, filter=None, limit=None,
    batch_size=None, ordered=true, storage_options=None, *, memory_budget=None,
    string_views=false, memory_map=false, verify_checksums=true, as_of_timestamp=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn delta(
    py: Python<'_>,
    location: String,
    version: Option<u64>,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    limit: Option<usize>,
    batch_size: Option<usize>,
    ordered: bool,
    storage_options: Option<HashMap<String, String>>,
    memory_budget: Option<usize>,
    string_views: bool,
    memory_map: bool,
    verify_checksums: bool,
    as_of_timestamp: Option<i64>,
) -> PyResult<Reader> {
    let common = Common {
        columns,
        filter,
        limit,
        batch_size,
        ordered,
        storage_options,
        memory_budget,
        string_views,
        memory_map,
        verify_checksums,
    };
    let mut scan = common.apply(rayquet_delta::TableScan::open(location))?;
    if let Some(t) = as_of_timestamp {
        scan = scan.as_of_timestamp(t);
    }
    if let Some(v) = version {
        scan = scan.version(v);
    }
    build_interruptibly(py, move || scan.build())
}
