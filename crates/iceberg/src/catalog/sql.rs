//! SQL catalogs (feature `sql-catalog`): the tables pyiceberg's `SqlCatalog` and Java's
//! `JdbcCatalog` keep in a database, sqlite or Postgres, named by a SQLAlchemy URL as pyiceberg
//! takes it (`sqlite:///relative.db`, `sqlite:////abs/path.db`,
//! `postgresql+psycopg2://user:password@host:5432/db`).
//!
//! A table's row in `iceberg_tables` (its catalog name, namespace and name) gives its metadata
//! location; the table is then read from there as a location is, its FileIO configured by the
//! catalog's storage properties (`s3.*`, ...). Both schema versions are read: v1 (a
//! `iceberg_type` column, whose `VIEW` rows are not tables) and v0 (without it).
//!
//! Why not iceberg-catalog-sql 0.10.1 (which shares this tree's iceberg): a reader must not
//! write, and its `connect` creates the catalog tables when they are missing (so a read-only
//! role fails, and a mistyped database becomes an empty catalog); it queries `iceberg_type`,
//! which v0 catalogs lack; and it panics on a malformed `pool.*` property. Reading a table is
//! one `SELECT`: a sqlite file is opened read-only, Postgres sees only `SELECT`s.
//!
//! Invariant: at most one connection per call, closed before it returns; a connection
//! attempt gives up after [`CONNECT_TIMEOUT`].

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableIdent};
use rayquet::{Error, ErrorKind, Result, ScanOptions};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::Connection;

use super::{redact, CatalogConfig, MISSING_NAMESPACE, MISSING_TABLE};

/// How long connecting to the catalog's database may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Load `ident` (written `table` by the caller) through the SQL catalog `config`.
pub(super) async fn load_table(
    config: &CatalogConfig,
    ident: &TableIdent,
    table: &str,
    options: &ScanOptions,
) -> Result<Table> {
    let location = {
        let mut db = Db::connect(config).await?;
        let found = db.metadata_location(config, ident, table).await;
        db.close().await;
        found?
    };
    super::table_at(config, ident, table, location, options).await
}

/// Every namespace of the catalog: those its tables are in and those with properties.
pub(super) async fn namespaces(config: &CatalogConfig, _: &ScanOptions) -> Result<Vec<String>> {
    let sql = "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ? \
               UNION SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ?";
    let name = config.name.as_str();
    let mut db = Db::connect(config).await?;
    let rows = db.strings(sql, &[name, name]).await;
    db.close().await;
    let rows = rows.map_err(|e| db_error(config, &e, "listing namespaces".to_string()))?;
    Ok(rows.into_iter().flatten().collect())
}

/// The tables of `namespace` (not its views); a namespace the catalog lacks is `NotFound`.
pub(super) async fn tables(
    config: &CatalogConfig,
    namespace: &NamespaceIdent,
    _: &ScanOptions,
) -> Result<Vec<String>> {
    let ns = namespace.join(".");
    let args = [config.name.as_str(), ns.as_str()];
    let select = "SELECT table_name FROM iceberg_tables \
                  WHERE catalog_name = ? AND table_namespace = ?";
    let mut db = Db::connect(config).await?;
    let rows = db.table_rows(select, &args).await;
    let exists = match &rows {
        Ok(r) if r.is_empty() => db.namespace_exists(config, &ns).await,
        _ => Ok(true),
    };
    db.close().await;
    let rows = rows.map_err(|e| db_error(config, &e, format!("namespace {ns:?}")))?;
    if !exists? {
        return Err(config.error(
            ErrorKind::NotFound,
            format!("namespace {ns:?}: {MISSING_NAMESPACE}"),
        ));
    }
    Ok(rows.into_iter().flatten().collect())
}

/// A connection to the catalog's database.
enum Db {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

impl Db {
    /// Connect to the database of `config`'s `uri` (read-only for sqlite).
    async fn connect(config: &CatalogConfig) -> Result<Db> {
        let uri = config
            .props
            .get("uri")
            .ok_or_else(|| config.error(ErrorKind::InvalidArgument, "has no `uri`".to_string()))?;
        let bad = |why: String| config.error(ErrorKind::InvalidArgument, why);
        let connect = async {
            match Url::parse(uri).map_err(bad)? {
                Url::Sqlite(path) => {
                    if !Path::new(&path).is_file() {
                        return Err(config.error(
                            ErrorKind::NotFound,
                            format!("has no sqlite database at {path:?} (uri {uri:?})"),
                        ));
                    }
                    let opts = SqliteConnectOptions::new().filename(&path).read_only(true);
                    SqliteConnection::connect_with(&opts).await.map(Db::Sqlite)
                }
                Url::Postgres(url) => {
                    let opts = PgConnectOptions::from_str(&url)
                        .map_err(|e| bad(format!("uri {}: {e}", redact(uri))))?;
                    PgConnection::connect_with(&opts).await.map(Db::Postgres)
                }
            }
            .map_err(|e| db_error(config, &e, format!("connecting to {}", redact(uri))))
        };
        tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| {
                config.error(
                    ErrorKind::Io,
                    format!(
                        "did not connect to {} within {} s",
                        redact(uri),
                        CONNECT_TIMEOUT.as_secs()
                    ),
                )
            })?
    }

    async fn close(self) {
        let _ = match self {
            Db::Sqlite(c) => c.close().await,
            Db::Postgres(c) => c.close().await,
        };
    }

    /// The values of the one-column `sql` (`?` placeholders) with `args` bound.
    async fn strings(
        &mut self,
        sql: &str,
        args: &[&str],
    ) -> std::result::Result<Vec<Option<String>>, sqlx::Error> {
        match self {
            Db::Sqlite(c) => {
                let mut q = sqlx::query_scalar::<_, Option<String>>(sql);
                for a in args {
                    q = q.bind(*a);
                }
                q.fetch_all(c).await
            }
            Db::Postgres(c) => {
                let sql = dollar_placeholders(sql);
                let mut q = sqlx::query_scalar::<_, Option<String>>(&sql);
                for a in args {
                    q = q.bind(*a);
                }
                q.fetch_all(c).await
            }
        }
    }

    /// The rows of `select` (on `iceberg_tables`, ending in a `WHERE` clause) that are
    /// tables: in a v1 catalog, rows whose `iceberg_type` is `TABLE` or null (not `VIEW`); a
    /// v0 catalog has no such column, and only tables.
    async fn table_rows(
        &mut self,
        select: &str,
        args: &[&str],
    ) -> std::result::Result<Vec<Option<String>>, sqlx::Error> {
        let v1 = format!("{select} AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)");
        match self.strings(&v1, args).await {
            Err(e) if missing(&e, "iceberg_type") => self.strings(select, args).await,
            r => r,
        }
    }

    /// The metadata location of `ident`'s row, as pyiceberg's `load_table` finds it; a
    /// missing namespace or table is `NotFound`, naming which.
    async fn metadata_location(
        &mut self,
        config: &CatalogConfig,
        ident: &TableIdent,
        table: &str,
    ) -> Result<String> {
        let namespace = ident.namespace().join(".");
        let args = [config.name.as_str(), namespace.as_str(), ident.name()];
        let select = "SELECT metadata_location FROM iceberg_tables \
                      WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?";
        let rows = self
            .table_rows(select, &args)
            .await
            .map_err(|e| db_error(config, &e, format!("table {table:?}")))?;
        match rows.into_iter().next() {
            Some(Some(location)) if !location.is_empty() => Ok(location),
            Some(_) => Err(config.error(
                ErrorKind::CorruptTable,
                format!("table {table:?}: its catalog row has no metadata location"),
            )),
            None => {
                let what = if self.namespace_exists(config, &namespace).await? {
                    MISSING_TABLE
                } else {
                    MISSING_NAMESPACE
                };
                Err(config.error(ErrorKind::NotFound, format!("table {table:?}: {what}")))
            }
        }
    }

    /// Whether the catalog knows `namespace`: a table in it, or its properties' rows.
    async fn namespace_exists(&mut self, config: &CatalogConfig, namespace: &str) -> Result<bool> {
        let sql = "SELECT table_namespace FROM iceberg_tables \
                   WHERE catalog_name = ? AND table_namespace = ? \
                   UNION SELECT namespace FROM iceberg_namespace_properties \
                   WHERE catalog_name = ? AND namespace = ?";
        let name = config.name.as_str();
        let rows = self
            .strings(sql, &[name, namespace, name, namespace])
            .await
            .map_err(|e| db_error(config, &e, format!("namespace {namespace:?}")))?;
        Ok(!rows.is_empty())
    }
}

/// A catalog's database URL, SQLAlchemy's form taken apart.
#[derive(Debug, PartialEq)]
enum Url {
    /// A sqlite file's path (relative to the working directory, as SQLAlchemy takes it).
    Sqlite(String),
    /// A `postgresql://` URL without SQLAlchemy's `+driver`.
    Postgres(String),
}

impl Url {
    fn parse(uri: &str) -> std::result::Result<Url, String> {
        let (scheme, rest) = uri
            .split_once("://")
            .ok_or_else(|| format!("uri {}: not a database URL", redact(uri)))?;
        let dialect = scheme.split('+').next().unwrap_or_default();
        match dialect.to_ascii_lowercase().as_str() {
            "sqlite" => {
                // `sqlite:///x.db`: the path follows the third slash (a fourth: absolute).
                let path = rest.strip_prefix('/').unwrap_or(rest);
                let path = path.split('?').next().unwrap_or_default();
                if path.is_empty() || path == ":memory:" {
                    return Err(format!(
                        "uri {uri:?}: an in-memory sqlite database holds no catalog another \
                         process wrote; name its file (sqlite:///path/catalog.db)"
                    ));
                }
                Ok(Url::Sqlite(path.to_string()))
            }
            "postgresql" | "postgres" => Ok(Url::Postgres(format!("postgresql://{rest}"))),
            other => Err(format!(
                "uri {}: a {other:?} database; SQL catalogs are read from sqlite and \
                 postgresql databases",
                redact(uri)
            )),
        }
    }
}

/// `?` placeholders as Postgres's `$1, $2...` (the statements here have no `?` in literals).
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `e` says the column (or table) `what` does not exist.
fn missing(e: &sqlx::Error, what: &str) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            let m = d.message();
            // sqlite: "no such column: x"; Postgres: 42703 undefined_column, 42P01 undefined_table.
            m.contains(what)
                && (m.contains("no such") || d.code().is_some_and(|c| c == "42703" || c == "42P01"))
        }
        _ => false,
    }
}

/// A database error as the caller's: a refused login is `PermissionDenied`; a database
/// without the catalog's tables, or a missing database, `NotFound`; the rest `Io`.
fn db_error(config: &CatalogConfig, e: &sqlx::Error, doing: String) -> Error {
    let (kind, why) = match e {
        sqlx::Error::Database(d) => {
            let code = d.code().map(|c| c.to_string()).unwrap_or_default();
            match code.as_str() {
                // invalid_authorization_specification, invalid_password
                "28000" | "28P01" => (ErrorKind::PermissionDenied, "login refused".to_string()),
                // invalid_catalog_name: no such database
                "3D000" => (ErrorKind::NotFound, "no such database".to_string()),
                _ if missing(e, "iceberg_tables") || missing(e, "iceberg_namespace_properties") => {
                    (
                        ErrorKind::NotFound,
                        "the database holds no Iceberg SQL catalog (no iceberg_tables table)"
                            .to_string(),
                    )
                }
                _ => (ErrorKind::Io, String::new()),
            }
        }
        _ => (ErrorKind::Io, String::new()),
    };
    let sep = if why.is_empty() { "" } else { ": " };
    config.error(kind, format!("{doing}: {why}{sep}{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlalchemy_urls() {
        assert_eq!(
            Url::parse("sqlite:///rel/c.db"),
            Ok(Url::Sqlite("rel/c.db".into()))
        );
        assert_eq!(
            Url::parse("sqlite:////abs/c.db"),
            Ok(Url::Sqlite("/abs/c.db".into()))
        );
        assert_eq!(
            Url::parse("postgresql+psycopg2://u:p@h:5432/d"),
            Ok(Url::Postgres("postgresql://u:p@h:5432/d".into()))
        );
        assert!(Url::parse("sqlite:///:memory:").is_err());
        let e = Url::parse("mysql+pymysql://u:secret@h/d").unwrap_err();
        assert!(e.contains("\"mysql\"") && !e.contains("secret"), "{e}");
        assert_eq!(redact("postgresql://u:pw@h/d"), "postgresql://u:***@h/d");
        assert_eq!(dollar_placeholders("a = ? AND b = ?"), "a = $1 AND b = $2");
    }
}
