//! REST catalogs (feature `rest`), through iceberg-rust's own `iceberg-catalog-rest`.
//!
//! Properties as pyiceberg's REST catalog takes them: `uri`, bearer `token`, OAuth2
//! `credential` = `client_id:secret` with `oauth2-server-uri` and `scope`, `warehouse`,
//! `prefix`, `header.*` extra headers. As pyiceberg does, it asks for vended credentials
//! (`X-Iceberg-Access-Delegation: vended-credentials`); the `config` a table's load returns
//! (endpoint, region, keys) reaches that table's FileIO and, through
//! [`store_options`](crate::storage::store_options), its data files.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::table::Table;
use iceberg::{Catalog, CatalogBuilder, NamespaceIdent, TableIdent};
use rayquet::{ErrorKind, Result, ScanOptions};

use super::{CatalogConfig, MISSING_NAMESPACE, MISSING_TABLE};
use crate::storage::ObjectStoreStorageFactory;

/// Load `ident` (written `table` by the caller) through the REST catalog `config`.
pub(super) async fn load_table(
    config: &CatalogConfig,
    ident: &TableIdent,
    table: &str,
    options: &ScanOptions,
) -> Result<Table> {
    let catalog = client(config, options).await?;
    catalog.load_table(ident).await.map_err(|e| {
        let what = match e.kind() {
            iceberg::ErrorKind::TableNotFound => format!("table {table:?}: {MISSING_TABLE} ({e})"),
            iceberg::ErrorKind::NamespaceNotFound => {
                format!("table {table:?}: {MISSING_NAMESPACE} ({e})")
            }
            _ => format!("table {table:?}: {e}"),
        };
        config.error(kind_of(&e), what).with_source(e)
    })
}

/// Every namespace, nested ones too (walked from the top), dotted.
pub(super) async fn namespaces(
    config: &CatalogConfig,
    options: &ScanOptions,
) -> Result<Vec<String>> {
    let catalog = client(config, options).await?;
    let mut out = Vec::new();
    let mut todo: Vec<Option<NamespaceIdent>> = vec![None];
    while let Some(parent) = todo.pop() {
        let children = catalog
            .list_namespaces(parent.as_ref())
            .await
            .map_err(|e| config.error(kind_of(&e), format!("listing namespaces: {e}")))?;
        for child in children {
            // A server that answers a parent with the parent itself would loop.
            if Some(&child) == parent.as_ref() || out.contains(&child.join(".")) {
                continue;
            }
            out.push(child.join("."));
            todo.push(Some(child));
        }
    }
    Ok(out)
}

/// The tables of `namespace`, by name.
pub(super) async fn tables(
    config: &CatalogConfig,
    namespace: &NamespaceIdent,
    options: &ScanOptions,
) -> Result<Vec<String>> {
    let catalog = client(config, options).await?;
    let tables = catalog.list_tables(namespace).await.map_err(|e| {
        config.error(
            kind_of(&e),
            format!("namespace {:?}: {e}", namespace.join(".")),
        )
    })?;
    Ok(tables.into_iter().map(|t| t.name().to_string()).collect())
}

/// The REST client: pyiceberg's default vended-credentials header unless set.
async fn client(
    config: &CatalogConfig,
    options: &ScanOptions,
) -> Result<iceberg_catalog_rest::RestCatalog> {
    let mut props: HashMap<String, String> = config.props.clone().into_iter().collect();
    props.remove("type");
    let delegation = "header.x-iceberg-access-delegation";
    if !props.keys().any(|k| k.eq_ignore_ascii_case(delegation)) {
        props.insert(delegation.to_string(), "vended-credentials".to_string());
    }
    let factory = Arc::new(ObjectStoreStorageFactory::new(options));
    iceberg_catalog_rest::RestCatalogBuilder::default()
        .with_storage_factory(factory)
        .load(config.name.clone(), props)
        .await
        .map_err(|e| config.error(kind_of(&e), format!("{e}")).with_source(e))
}

/// What a catalog's error means to a caller: a missing table or namespace is `NotFound`,
/// a refused token or credential (HTTP 401, 403) `PermissionDenied`, the rest `Io`.
fn kind_of(e: &iceberg::Error) -> ErrorKind {
    use iceberg::ErrorKind as K;
    let text = e.to_string();
    match e.kind() {
        K::TableNotFound | K::NamespaceNotFound => ErrorKind::NotFound,
        K::FeatureUnsupported => ErrorKind::Unsupported,
        K::DataInvalid if text.contains("uri is required") => ErrorKind::InvalidArgument,
        _ if [
            "401 Unauthorized",
            "403 Forbidden",
            "unauthorized_client",
            "invalid_client",
        ]
        .iter()
        .any(|s| text.contains(s)) =>
        {
            ErrorKind::PermissionDenied
        }
        _ => ErrorKind::Io,
    }
}
