//! AWS Glue catalogs (feature `glue-catalog`): a table is a Glue table of a database (the
//! namespace, one level) whose `metadata_location` parameter names its metadata file, as
//! pyiceberg's `GlueCatalog` and Iceberg Java's write them; tables of other types are not
//! Iceberg tables and are left out.
//!
//! Properties as pyiceberg takes them: `glue.region` (else `client.region`, `AWS_REGION`,
//! `AWS_DEFAULT_REGION`), `glue.endpoint` (default `https://glue.<region>.amazonaws.com`),
//! `glue.id` (the catalog's account id), and credentials `glue.access-key-id`,
//! `glue.secret-access-key`, `glue.session-token` (else the `client.*` ones, else
//! object_store's chain: environment, web identity, container and instance credentials).
//!
//! No AWS SDK: Glue's API is JSON over HTTPS, each request signed with SigV4 by
//! object_store's own `AwsAuthorizer` and sent by its HTTP client, with the credential
//! chain it already has for S3; the SDK (aws-config, aws-sdk-glue) would add several minutes
//! to a cold build for three calls.

use bytes::Bytes;
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableIdent};
use object_store::aws::{AmazonS3Builder, AwsAuthorizer};
use object_store::client::{ClientOptions, HttpConnector, ReqwestConnector};
use rayquet::{Error, ErrorKind, Result, ScanOptions};
use serde_json::{json, Value};

use super::{CatalogConfig, MISSING_NAMESPACE, MISSING_TABLE};

/// Load `ident` (written `table` by the caller) through the Glue catalog `config`.
pub(super) async fn load_table(
    config: &CatalogConfig,
    ident: &TableIdent,
    table: &str,
    options: &ScanOptions,
) -> Result<Table> {
    let glue = Glue::new(config)?;
    let database = database(config, ident.namespace())?;
    let body = json!({"DatabaseName": database, "Name": ident.name()});
    let answer = glue.call("GetTable", body).await.map_err(|e| match e {
        Call::Glue(kind, m) if kind == "EntityNotFoundException" => {
            // Glue says which is missing only in its message.
            let what = if m.to_ascii_lowercase().contains("database") {
                MISSING_NAMESPACE
            } else {
                MISSING_TABLE
            };
            config.error(
                ErrorKind::NotFound,
                format!("table {table:?}: {what} ({m})"),
            )
        }
        e => e.into_error(config, &format!("table {table:?}")),
    })?;
    let params = &answer["Table"]["Parameters"];
    let location = match params.get("metadata_location").and_then(Value::as_str) {
        Some(l) if is_iceberg(params) && !l.is_empty() => l.to_string(),
        _ => {
            return Err(config.error(
                ErrorKind::InvalidArgument,
                format!("table {table:?}: not an Iceberg table (no metadata_location parameter)"),
            ))
        }
    };
    super::table_at(config, ident, table, location, options).await
}

/// The catalog's databases.
pub(super) async fn namespaces(config: &CatalogConfig, _: &ScanOptions) -> Result<Vec<String>> {
    let glue = Glue::new(config)?;
    glue.pages("GetDatabases", json!({}), "DatabaseList", |d| {
        d["Name"].as_str().map(str::to_string)
    })
    .await
    .map_err(|e| e.into_error(config, "listing databases"))
}

/// The Iceberg tables of `namespace` (a database).
pub(super) async fn tables(
    config: &CatalogConfig,
    namespace: &NamespaceIdent,
    _: &ScanOptions,
) -> Result<Vec<String>> {
    let glue = Glue::new(config)?;
    let database = database(config, namespace)?;
    let body = json!({"DatabaseName": database});
    glue.pages("GetTables", body, "TableList", |t| {
        is_iceberg(&t["Parameters"])
            .then(|| t["Name"].as_str().map(str::to_string))
            .flatten()
    })
    .await
    .map_err(|e| match e {
        Call::Glue(kind, m) if kind == "EntityNotFoundException" => config.error(
            ErrorKind::NotFound,
            format!("namespace {database:?}: {MISSING_NAMESPACE} ({m})"),
        ),
        e => e.into_error(config, &format!("namespace {database:?}")),
    })
}

/// Whether a Glue table's parameters say it is an Iceberg table.
fn is_iceberg(params: &Value) -> bool {
    params["table_type"]
        .as_str()
        .is_some_and(|t| t.eq_ignore_ascii_case("iceberg"))
}

/// Glue's namespaces have one level: the database.
fn database(config: &CatalogConfig, namespace: &NamespaceIdent) -> Result<String> {
    match namespace.as_ref().as_slice() {
        [db] => Ok(db.clone()),
        _ => Err(config.error(
            ErrorKind::InvalidArgument,
            format!(
                "namespace {:?}: Glue namespaces are databases, one level deep",
                namespace.join(".")
            ),
        )),
    }
}

/// A failed call: Glue's error (its `__type` and message), or one on the way.
enum Call {
    Glue(String, String),
    Http(u16, String),
    Other(ErrorKind, String),
}

impl Call {
    fn into_error(self, config: &CatalogConfig, doing: &str) -> Error {
        let (kind, why) = match self {
            Call::Glue(t, m) => {
                let kind = match t.as_str() {
                    "AccessDeniedException"
                    | "UnrecognizedClientException"
                    | "InvalidSignatureException"
                    | "ExpiredTokenException" => ErrorKind::PermissionDenied,
                    "EntityNotFoundException" => ErrorKind::NotFound,
                    _ => ErrorKind::Io,
                };
                (kind, format!("{t}: {m}"))
            }
            Call::Http(status, body) => {
                let kind = match status {
                    401 | 403 => ErrorKind::PermissionDenied,
                    _ => ErrorKind::Io,
                };
                (kind, format!("HTTP {status}: {body}"))
            }
            Call::Other(kind, m) => (kind, m),
        };
        config.error(kind, format!("{doing}: {why}"))
    }
}

/// A Glue client: its endpoint, region, catalog id and credentials.
struct Glue {
    endpoint: String,
    region: String,
    catalog_id: Option<String>,
    credentials: object_store::aws::AwsCredentialProvider,
    http: object_store::client::HttpClient,
}

impl Glue {
    fn new(config: &CatalogConfig) -> Result<Glue> {
        let props = &config.props;
        let get = |keys: &[&str]| keys.iter().find_map(|k| props.get(*k).cloned());
        let region = get(&["glue.region", "client.region"])
            .or_else(|| std::env::var("AWS_REGION").ok())
            .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
            .ok_or_else(|| {
                config.error(
                    ErrorKind::InvalidArgument,
                    "has no region: set glue.region (or AWS_REGION)".to_string(),
                )
            })?;
        let endpoint = get(&["glue.endpoint"])
            .unwrap_or_else(|| format!("https://glue.{region}.amazonaws.com"));
        let mut s3 = AmazonS3Builder::from_env()
            .with_region(&region)
            .with_bucket_name("glue-catalog");
        let key = get(&["glue.access-key-id", "client.access-key-id"]);
        let secret = get(&["glue.secret-access-key", "client.secret-access-key"]);
        if let (Some(key), Some(secret)) = (key, secret) {
            s3 = s3.with_access_key_id(key).with_secret_access_key(secret);
            if let Some(token) = get(&["glue.session-token", "client.session-token"]) {
                s3 = s3.with_token(token);
            }
        }
        let bad = |e: object_store::Error| config.error(ErrorKind::InvalidArgument, e.to_string());
        let credentials = s3.build().map_err(bad)?.credentials().clone();
        let http = ReqwestConnector::default()
            .connect(&ClientOptions::new().with_allow_http(true))
            .map_err(bad)?;
        Ok(Glue {
            endpoint,
            region,
            catalog_id: get(&["glue.id"]),
            credentials,
            http,
        })
    }

    /// Add the catalog's account id to a request, when it has one.
    fn catalog_id(&self, body: &mut Value) {
        if let Some(id) = &self.catalog_id {
            body["CatalogId"] = json!(id);
        }
    }

    /// Call Glue's `action` with `body`; its JSON answer.
    async fn call(&self, action: &str, mut body: Value) -> std::result::Result<Value, Call> {
        self.catalog_id(&mut body);
        let credential =
            self.credentials.get_credential().await.map_err(|e| {
                Call::Other(ErrorKind::PermissionDenied, format!("credentials: {e}"))
            })?;
        let mut request = http::Request::builder()
            .method("POST")
            .uri(&self.endpoint)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", format!("AWSGlue.{action}"))
            .body(Bytes::from(body.to_string()).into())
            .map_err(|e| Call::Other(ErrorKind::InvalidArgument, format!("{e}")))?;
        AwsAuthorizer::new(&credential, "glue", &self.region).authorize(&mut request, None);
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|e| Call::Other(ErrorKind::Io, format!("{} {e}", self.endpoint)))?;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| Call::Other(ErrorKind::Io, format!("{e}")))?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status == 200 {
            return Ok(value);
        }
        match value.get("__type").and_then(Value::as_str) {
            Some(t) => {
                // `__type` may carry a namespace prefix (`com.amazonaws...#Name`).
                let t = t.rsplit('#').next().unwrap_or(t).to_string();
                let m = ["message", "Message"]
                    .iter()
                    .find_map(|k| value.get(*k).and_then(Value::as_str))
                    .unwrap_or_default();
                Err(Call::Glue(t, m.to_string()))
            }
            None => Err(Call::Http(
                status,
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned(),
            )),
        }
    }

    /// Every page of a listing `action`: `pick` of each entry of the answers' `list`.
    async fn pages(
        &self,
        action: &str,
        body: Value,
        list: &str,
        pick: impl Fn(&Value) -> Option<String>,
    ) -> std::result::Result<Vec<String>, Call> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        // A listing that keeps answering with new tokens ends after this many pages.
        for _ in 0..10_000 {
            let mut page = body.clone();
            if let Some(t) = &token {
                page["NextToken"] = json!(t);
            }
            let answer = self.call(action, page).await?;
            if let Some(items) = answer[list].as_array() {
                out.extend(items.iter().filter_map(&pick));
            }
            token = answer["NextToken"]
                .as_str()
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if token.is_none() {
                return Ok(out);
            }
        }
        Err(Call::Other(
            ErrorKind::Io,
            format!("{action}: more than 10,000 pages"),
        ))
    }
}
