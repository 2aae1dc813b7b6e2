//! Tables through a catalog, named as pyiceberg names them (features `rest`, `sql-catalog`,
//! `glue-catalog`).
//!
//! A catalog is a name and its properties, found where pyiceberg finds them: the
//! `.pyiceberg.yaml` of `$PYICEBERG_HOME`, else of the home directory, else of the working
//! directory (its `catalog: {NAME: {...}}` section), then
//! `PYICEBERG_CATALOG__<NAME>__<KEY>` environment variables over it (`__` inside a key is a
//! `.`, `_` a `-`), then the properties the caller passes. A user's existing pyiceberg
//! configuration works unchanged.
//!
//! The catalog's `type` (else its `uri`'s scheme: `http`/`https` is REST,
//! `sqlite`/`postgresql` SQL) picks the client: REST (iceberg-rust's own client, vended
//! credentials), SQL (pyiceberg's `SqlCatalog` tables, read-only) or Glue (`type: glue`:
//! Glue's API, SigV4-signed with object_store's credential chain). Storage properties
//! (`s3.*`, `gcs.*`, `adls.*`...) of the catalog, or those a REST catalog vends with a table,
//! reach that table's FileIO and, through [`store_options`](crate::storage::store_options),
//! its data files. A type this build does not read is an `Unsupported` error naming it.
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

mod config;
#[cfg(feature = "glue-catalog")]
mod glue;
#[cfg(feature = "rest")]
mod rest;
#[cfg(feature = "sql-catalog")]
mod sql;

use std::collections::BTreeMap;
use std::path::PathBuf;

use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableIdent};
use rayquet::{Error, ErrorKind, Result, ScanOptions};

use config::yaml_catalog;

/// The answer to `ask` from catalog client module `$client`: each client has the same three
/// functions (`load_table`, `namespaces`, `tables`), whatever protocol it speaks.
#[cfg(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog"))]
macro_rules! answer {
    ($client:ident, $config:expr, $ask:expr, $opts:expr) => {
        match $ask {
            Ask::Table(ident, table) => Answer::Table(Box::new(
                $client::load_table($config, &ident, &table, $opts).await?,
            )),
            Ask::Namespaces => Answer::Names($client::namespaces($config, $opts).await?),
            Ask::Tables(ns) => Answer::Names($client::tables($config, &ns, $opts).await?),
        }
    };
}

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

    /// The catalog `name` as pyiceberg's `load_catalog(name, **properties)` configures it:
    /// [`CatalogConfig::load`]'s configuration with `props` over it, or `props` alone when
    /// the catalog is configured nowhere (then they must say its `uri` or `type`).
    pub fn load_with<K: Into<String>, V: Into<String>>(
        name: &str,
        props: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        let props: Vec<(String, String)> = props
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let config = match Self::load(name) {
            Ok(c) => c,
            Err(_) if props.iter().any(|(k, _)| k == "uri" || k == "type") => {
                CatalogConfig::new(name, Vec::<(String, String)>::new())
            }
            Err(e) => return Err(e),
        };
        Ok(props.into_iter().fold(config, |c, (k, v)| c.property(k, v)))
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
                    format!("has no `type` and its uri {:?} does not say one", redact(u)),
                ))
            }
        };
        Ok(kind.to_string())
    }

    fn error(&self, kind: ErrorKind, what: String) -> Error {
        Error::new(kind, format!("catalog {:?} {what}", self.name))
    }

    /// Load `table` (`namespace.table`, nested namespaces dotted: `a.b.t`) from the catalog,
    /// its FileIO reading through the stores of `options` (and the catalog's storage
    /// properties, or the credentials it vends), on their IO runtime.
    pub fn load_table(&self, table: &str, options: &ScanOptions) -> Result<Table> {
        let ident = identifier(table).map_err(|m| self.error(ErrorKind::InvalidArgument, m))?;
        match self.ask(Ask::Table(ident, table.to_string()), options)? {
            Answer::Table(t) => Ok(*t),
            Answer::Names(_) => unreachable!("a table asked for, names answered"),
        }
    }

    /// Every namespace of the catalog (nested ones dotted: `a.b`), sorted; read when called.
    pub fn namespaces(&self, options: &ScanOptions) -> Result<Vec<String>> {
        let mut found = self.names(Ask::Namespaces, options)?;
        found.dedup();
        Ok(found)
    }

    /// The tables of `namespace` (dotted: `a.b`), their names without it, sorted; read when
    /// called. A namespace the catalog does not have is `NotFound`.
    pub fn tables(&self, namespace: &str, options: &ScanOptions) -> Result<Vec<String>> {
        let ns =
            namespace_ident(namespace).map_err(|m| self.error(ErrorKind::InvalidArgument, m))?;
        self.names(Ask::Tables(ns), options)
    }

    /// The names `ask` answers, sorted.
    fn names(&self, ask: Ask, options: &ScanOptions) -> Result<Vec<String>> {
        match self.ask(ask, options)? {
            Answer::Names(mut names) => {
                names.sort();
                Ok(names)
            }
            Answer::Table(_) => unreachable!("names asked for, a table answered"),
        }
    }

    /// Ask the catalog, through the client of its type, on the IO runtime of `options`.
    fn ask(&self, ask: Ask, options: &ScanOptions) -> Result<Answer> {
        let kind = self.kind()?;
        let config = self.clone();
        let opts = options.clone();
        let _ = (&config, &opts, &ask); // used by no arm when no catalog type is built
        match kind.as_str() {
            #[cfg(feature = "rest")]
            "rest" => {
                rayquet::layer::block_on(
                    options,
                    async move { Ok(answer!(rest, &config, ask, &opts)) },
                )
            }
            #[cfg(feature = "sql-catalog")]
            "sql" => {
                rayquet::layer::block_on(
                    options,
                    async move { Ok(answer!(sql, &config, ask, &opts)) },
                )
            }
            #[cfg(feature = "glue-catalog")]
            "glue" => {
                rayquet::layer::block_on(
                    options,
                    async move { Ok(answer!(glue, &config, ask, &opts)) },
                )
            }
            _ => Err(self.unsupported(&kind)),
        }
    }

    /// A catalog of a type this build does not read.
    fn unsupported(&self, kind: &str) -> Error {
        let feature = match kind {
            "rest" => "; REST catalogs need the `rest` feature",
            "sql" => "; SQL catalogs need the `sql-catalog` feature",
            "glue" => "; Glue catalogs need the `glue-catalog` feature",
            _ => "",
        };
        let built = if BUILT.is_empty() {
            "none".to_string()
        } else {
            BUILT.join(", ")
        };
        self.error(
            ErrorKind::Unsupported,
            format!(
                "is of type {kind:?}, which this rayquet does not read (it reads: {built}){feature}; \
                 open the table by its metadata location"
            ),
        )
    }
}

/// The table `ident` (written `table` by the caller) whose metadata file the catalog says is
/// at `location`, its FileIO configured by the catalog's properties over `options`' stores
/// (the SQL and Glue catalogs, which keep only a table's location).
#[cfg(any(feature = "sql-catalog", feature = "glue-catalog"))]
async fn table_at(
    config: &CatalogConfig,
    ident: &TableIdent,
    table: &str,
    location: String,
    options: &ScanOptions,
) -> Result<Table> {
    use iceberg::io::FileIOBuilder;
    let factory = crate::storage::ObjectStoreStorageFactory::new(options);
    let file_io = FileIOBuilder::new(std::sync::Arc::new(factory))
        .with_props(config.props.clone())
        .build();
    let loaded = iceberg::table::StaticTable::from_metadata_file(&location, ident.clone(), file_io)
        .await
        .map_err(|e| {
            crate::ice(e)
                .context(format!(
                    "catalog {:?} table {table:?}: loading table metadata",
                    config.name
                ))
                .with_path(location.clone())
        })?;
    Ok(loaded.into_table())
}

/// What a caller asks of a catalog's client.
#[cfg_attr(
    not(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog")),
    allow(dead_code)
)]
enum Ask {
    /// Load the table (its identifier, and its name as the caller wrote it).
    Table(TableIdent, String),
    /// List every namespace.
    Namespaces,
    /// List the tables of a namespace.
    Tables(NamespaceIdent),
}

/// A client's answer.
#[cfg_attr(
    not(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog")),
    allow(dead_code)
)]
enum Answer {
    Table(Box<Table>),
    Names(Vec<String>),
}

/// What a catalog's error says when it has no such table ([`is_missing_table`]).
const MISSING_TABLE: &str = "table not found";
/// What a catalog's error says when it has no such namespace ([`is_missing_table`]).
const MISSING_NAMESPACE: &str = "namespace not found";

/// Whether `e`, from [`CatalogConfig::load_table`] or [`CatalogConfig::tables`], says that
/// the catalog has no such table or namespace (rather than that it could not be asked, or
/// that the table's metadata could not be read).
pub fn is_missing_table(e: &Error) -> bool {
    e.kind() == ErrorKind::NotFound
        && (e.message().contains(MISSING_TABLE) || e.message().contains(MISSING_NAMESPACE))
}

/// `uri` without its password, to be shown in an error.
pub(crate) fn redact(uri: &str) -> String {
    match (uri.find("://"), uri.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let auth = &uri[s + 3..at];
            match auth.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &uri[..s + 3], &uri[at..]),
                None => uri.to_string(),
            }
        }
        _ => uri.to_string(),
    }
}

/// The catalog types this build reads.
const BUILT: &[&str] = &[
    #[cfg(feature = "rest")]
    "REST",
    #[cfg(feature = "sql-catalog")]
    "SQL",
    #[cfg(feature = "glue-catalog")]
    "Glue",
];

/// `a.b` as a namespace identifier.
fn namespace_ident(namespace: &str) -> std::result::Result<NamespaceIdent, String> {
    let parts: Vec<&str> = namespace.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "namespace {namespace:?}: name a namespace as a or a.b (nested)"
        ));
    }
    NamespaceIdent::from_strs(parts).map_err(|e| format!("namespace {namespace:?}: {e}"))
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
