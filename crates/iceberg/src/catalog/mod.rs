//! Tables through a catalog, named as pyiceberg names them (feature `rest`).
//!
//! A catalog is a name and its properties, found where pyiceberg finds them: the
//! `.pyiceberg.yaml` of `$PYICEBERG_HOME`, else of the home directory, else of the working
//! directory (its `catalog: {NAME: {...}}` section), then `PYICEBERG_CATALOG__<NAME>__<KEY>`
//! environment variables over it (`__` inside a key is a `.`, `_` a `-`), then the properties
//! the caller passes. A user's existing pyiceberg configuration works unchanged.
//!
//! The catalog's `type` (else its `uri`'s scheme: `http`/`https` is REST) picks the client:
//! REST through iceberg-rust's own `iceberg-catalog-rest` (bearer `token`, OAuth2
//! `credential` = `client_id:secret` with `oauth2-server-uri` and `scope`, `warehouse`,
//! `prefix`, `header.*` extra headers). As pyiceberg does, it asks for vended credentials
//! (`X-Iceberg-Access-Delegation: vended-credentials`); the `config` a table's load returns
//! (endpoint, region, keys) reaches that table's FileIO and, through
//! [`store_options`](crate::storage::store_options), its data files. Other catalog types
//! are an `Unsupported` error naming them.
//!
//! Invariant: every error names the catalog (and the table when there is one).
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::ScanBuilder;
//! use rayquet_iceberg::catalog::CatalogConfig;
//! use rayquet_iceberg::TableScan;
//! // `~/.pyiceberg.yaml`: catalog: {prod: {uri: https://..., credential: id:secret}}
//! let batches = TableScan::from_catalog(CatalogConfig::load("prod")?, "sales.orders")
//!     .columns(["id", "total"])
//!     .build()?;
//! # let _ = batches; Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iceberg::table::Table;
use iceberg::{Catalog, CatalogBuilder, TableIdent};
use rayquet::{Error, ErrorKind, Result, ScanOptions};

use crate::storage::ObjectStoreStorageFactory;

/// A catalog's name and properties (see the module doc).
#[derive(Clone, PartialEq, Eq)]
pub struct CatalogConfig {
    name: String,
    props: BTreeMap<String, String>,
}

impl std::fmt::Debug for CatalogConfig {
    /// Property names only: values may be credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogConfig")
            .field("name", &self.name)
            .field("properties", &self.props.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl CatalogConfig {
    /// The catalog `name` as pyiceberg's `load_catalog(name)` configures it: its section of
    /// the first `.pyiceberg.yaml` found, then `PYICEBERG_CATALOG__<NAME>__*` variables. A
    /// catalog configured nowhere is a `NotFound` error naming the places looked in.
    pub fn load(name: &str) -> Result<Self> {
        let dirs = [
            std::env::var_os("PYICEBERG_HOME").map(PathBuf::from),
            std::env::var_os("HOME").map(PathBuf::from),
            std::env::current_dir().ok(),
        ];
        Self::load_from(name, dirs.iter().flatten(), std::env::vars())
    }

    /// [`CatalogConfig::load`] from these directories (the first holding `.pyiceberg.yaml`)
    /// and environment variables.
    pub fn load_from<'a>(
        name: &str,
        dirs: impl IntoIterator<Item = &'a PathBuf>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self> {
        let mut props = BTreeMap::new();
        let mut looked = Vec::new();
        for dir in dirs {
            let file = dir.join(".pyiceberg.yaml");
            looked.push(file.display().to_string());
            if file.is_file() {
                if let Some(p) = yaml_catalog(&file, name)? {
                    props = p;
                }
                break;
            }
        }
        // pyiceberg: the variable's name lowercased, split on `__` at most twice; within a
        // part `__` is `.` and `_` is `-` (so `MY_CAT` names catalog `my-cat`).
        let part = |p: &str| p.replace("__", ".").replace('_', "-");
        for (k, v) in env {
            let k = k.to_ascii_lowercase();
            let Some(rest) = k.strip_prefix("pyiceberg_") else {
                continue;
            };
            let parts: Vec<&str> = rest.splitn(3, "__").collect();
            if let ["catalog", catalog, key] = parts[..] {
                if part(catalog) == name.to_ascii_lowercase() {
                    props.insert(part(key), v);
                }
            }
        }
        if props.is_empty() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "catalog {name:?} is not configured: no `catalog: {{{name}: ...}}` in the \
                     first .pyiceberg.yaml found ({}) and no PYICEBERG_CATALOG__{}__URI \
                     variable",
                    looked.join(", "),
                    name.to_ascii_uppercase()
                ),
            ));
        }
        Ok(CatalogConfig {
            name: name.to_string(),
            props,
        })
    }

    /// A catalog configured by these properties alone (`uri`, `type`, `token`...).
    pub fn new<K: Into<String>, V: Into<String>>(
        name: impl Into<String>,
        props: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        CatalogConfig {
            name: name.into(),
            props: props
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Set a property (over the configuration's own, as pyiceberg's `load_catalog(name,
    /// **properties)`).
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.props.insert(key.into(), value.into());
        self
    }

    /// The catalog's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The catalog's properties.
    pub fn properties(&self) -> &BTreeMap<String, String> {
        &self.props
    }

    /// The catalog's type: its `type` property, else from its `uri`'s scheme, as pyiceberg
    /// infers it (`http`/`https`: `rest`; `thrift`: `hive`; `sqlite`/`postgresql`: `sql`).
    pub fn kind(&self) -> Result<String> {
        if let Some(t) = self.props.get("type") {
            return Ok(t.to_ascii_lowercase());
        }
        let uri = self.props.get("uri").ok_or_else(|| {
            self.error(
                ErrorKind::InvalidArgument,
                "has no `uri` (nor `type`)".to_string(),
            )
        })?;
        let kind = match uri {
            u if u.starts_with("http") => "rest",
            u if u.starts_with("thrift") => "hive",
            u if u.starts_with("sqlite") || u.starts_with("postgresql") => "sql",
            u => {
                return Err(self.error(
                    ErrorKind::InvalidArgument,
                    format!("has no `type` and its uri {u:?} does not say one"),
                ))
            }
        };
        Ok(kind.to_string())
    }

    fn error(&self, kind: ErrorKind, what: String) -> Error {
        Error::new(kind, format!("catalog {:?} {what}", self.name))
    }

    /// Load `table` (`namespace.table`, nested namespaces dotted: `a.b.t`) from the catalog,
    /// its FileIO reading through the stores of `options` (and the catalog's vended
    /// properties), on their IO runtime.
    pub fn load_table(&self, table: &str, options: &ScanOptions) -> Result<Table> {
        let ident = identifier(table).map_err(|m| self.error(ErrorKind::InvalidArgument, m))?;
        let kind = self.kind()?;
        if kind != "rest" {
            return Err(self.error(
                ErrorKind::Unsupported,
                format!(
                    "is of type {kind:?}: this rayquet reads REST catalogs (SQL and Glue \
                     catalogs are not built in yet); open the table by its metadata location"
                ),
            ));
        }
        let config = self.clone();
        let opts = options.clone();
        let table_name = table.to_string();
        rayquet::layer::block_on(options, async move {
            let catalog = config.rest(&opts).await?;
            catalog.load_table(&ident).await.map_err(|e| {
                config
                    .error(kind_of(&e), format!("table {table_name:?}: {e}"))
                    .with_source(e)
            })
        })
    }

    /// The REST client: pyiceberg's default vended-credentials header unless set.
    async fn rest(&self, options: &ScanOptions) -> Result<iceberg_catalog_rest::RestCatalog> {
        let mut props: std::collections::HashMap<String, String> =
            self.props.clone().into_iter().collect();
        props.remove("type");
        let delegation = "header.x-iceberg-access-delegation";
        if !props.keys().any(|k| k.eq_ignore_ascii_case(delegation)) {
            props.insert(delegation.to_string(), "vended-credentials".to_string());
        }
        let factory = Arc::new(ObjectStoreStorageFactory::new(options));
        iceberg_catalog_rest::RestCatalogBuilder::default()
            .with_storage_factory(factory)
            .load(self.name.clone(), props)
            .await
            .map_err(|e| self.error(kind_of(&e), format!("{e}")).with_source(e))
    }
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

/// `a.b.t` as a table identifier (namespace `a.b`, table `t`).
fn identifier(table: &str) -> std::result::Result<TableIdent, String> {
    let parts: Vec<&str> = table.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "table {table:?}: name a table as namespace.table (nested: a.b.table)"
        ));
    }
    TableIdent::from_strs(parts).map_err(|e| format!("table {table:?}: {e}"))
}

/// The properties of catalog `name` in a `.pyiceberg.yaml` (`None`: it has no such catalog).
/// Keys are compared lowercased, as pyiceberg does; nested maps flatten to dotted keys.
fn yaml_catalog(file: &Path, name: &str) -> Result<Option<BTreeMap<String, String>>> {
    use yaml_rust2::{Yaml, YamlLoader};
    let bad =
        |m: String| Error::new(ErrorKind::InvalidArgument, m).with_path(file.display().to_string());
    let text = std::fs::read_to_string(file).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let docs = YamlLoader::load_from_str(&text).map_err(|e| bad(format!("not YAML: {e}")))?;
    let Some(Yaml::Hash(top)) = docs.into_iter().next() else {
        return Ok(None);
    };
    let find = |h: &yaml_rust2::yaml::Hash, key: &str| -> Option<Yaml> {
        h.iter()
            .find(|(k, _)| scalar(k).is_some_and(|k| k.eq_ignore_ascii_case(key)))
            .map(|(_, v)| v.clone())
    };
    let Some(Yaml::Hash(catalogs)) = find(&top, "catalog") else {
        return Ok(None);
    };
    let Some(section) = find(&catalogs, name) else {
        return Ok(None);
    };
    let Yaml::Hash(section) = section else {
        return Err(bad(format!("catalog.{name} must be a mapping")));
    };
    let mut out = BTreeMap::new();
    flatten(&section, "", &mut out).map_err(bad)?;
    Ok(Some(out))
}

/// A YAML scalar as pyiceberg's strictyaml reads it: a string.
fn scalar(y: &yaml_rust2::Yaml) -> Option<String> {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn flatten(
    h: &yaml_rust2::yaml::Hash,
    prefix: &str,
    out: &mut BTreeMap<String, String>,
) -> std::result::Result<(), String> {
    use yaml_rust2::Yaml;
    for (k, v) in h {
        let k = scalar(k).ok_or("a catalog property's name must be a string")?;
        let key = format!("{prefix}{}", k.to_ascii_lowercase());
        match v {
            Yaml::Hash(inner) => flatten(inner, &format!("{key}."), out)?,
            Yaml::Null => {}
            v => {
                let v = scalar(v).ok_or(format!("catalog property {key}: not a plain value"))?;
                out.insert(key, v);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_as_pyiceberg_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".pyiceberg.yaml"),
            "catalog:\n  Prod:\n    uri: http://localhost:8181\n    s3.endpoint: http://x:9000\n    \
             header:\n      X-Extra: 1\n  other:\n    uri: http://other\n",
        )
        .unwrap();
        let dirs = [dir.path().to_path_buf()];
        let env = [
            (
                "PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID".to_string(),
                "k".to_string(),
            ),
            (
                "PYICEBERG_CATALOG__OTHER__URI".to_string(),
                "no".to_string(),
            ),
        ];
        let c = CatalogConfig::load_from("prod", &dirs, env.clone()).unwrap();
        let want: BTreeMap<String, String> = [
            ("uri", "http://localhost:8181"),
            ("s3.endpoint", "http://x:9000"),
            ("header.x-extra", "1"),
            ("s3.access-key-id", "k"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(c.properties(), &want);
        assert_eq!(c.kind().unwrap(), "rest");
        let e = CatalogConfig::load_from("missing", &dirs, env).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("\"missing\""), "{e}");
        assert!(
            e.to_string().contains("PYICEBERG_CATALOG__MISSING__URI"),
            "{e}"
        );
    }

    #[test]
    fn identifiers_as_pyiceberg_splits_them() {
        let t = identifier("a.b.t").unwrap();
        assert_eq!(t.namespace().as_ref(), &["a".to_string(), "b".to_string()]);
        assert_eq!(t.name(), "t");
        assert!(identifier("t").is_err() && identifier("a..t").is_err());
    }
}
