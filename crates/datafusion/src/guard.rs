//! What a rayquet worker lets in ([`WorkerGuard`]), and what a coordinator presents to it
//! ([`Credentials`]).
//!
//! A worker executes the plans clients send it, with its own credentials and file system: on
//! a shared network anyone who reaches its port would otherwise run any plan datafusion-proto
//! decodes (a `CsvScan` of `/etc/passwd`, a `ParquetSink` writing as the worker's user), and
//! read any object its identity reaches. So a guarded worker ([`crate::serve_guarded`]):
//!
//! - **authenticates every call**: a shared bearer token (`authorization: Bearer <token>`,
//!   compared in constant time by an interceptor on every gRPC call) and/or mutual TLS (rustls
//!   through tonic: the worker's certificate and key, the CA that clients' certificates must
//!   chain to). The coordinator ([`crate::distributed_session_with`]) and workers dialing their
//!   peers present the same ([`SecureChannels`]).
//! - **runs only what a rayquet query needs** ([`check_plan`], datafusion-distributed's
//!   worker plan rewrite hook, after decoding and before anything executes): rayquet's scans,
//!   DataFusion's compute operators and datafusion-distributed's network nodes; a file scan or
//!   sink of DataFusion's own, or a node it does not know, is refused with an error naming it.
//! - **reads only under its roots** ([`Roots`]): every path a unit reads (data file, delete
//!   files, deletion vectors) must lie under a root the worker was started with, after
//!   normalising it (`.` and `..`, percent-escapes; symlinks for local roots). With no root
//!   given, object-store URLs only: no local file.
//! - **dials only its peers**: the worker URLs a plan names must be ones it was told of.
//! - **stays within its limits** ([`Limits`]): the largest gRPC message, concurrent calls (a
//!   call past the limit is refused at once, the others go on), a DataFusion memory pool, and
//!   HTTP/2 keepalives that drop dead peers.
//!
//! Invariant: a refusal happens before any file is opened or any task registered, and is an
//! error naming what was refused (`Unauthenticated` for credentials).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::grpc::{create_worker_client, BoxCloneSyncChannel};
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use url::Url;

/// A shared secret, never printed.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token: at least 16 visible ASCII characters (what an HTTP header carries).
    pub fn new(value: &str) -> Result<Self> {
        let value = value.trim();
        if value.len() < 16 || !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(DataFusionError::Configuration(
                "a worker token must be at least 16 visible ASCII characters".into(),
            ));
        }
        Ok(Token(Arc::from(value)))
    }

    /// The token in the file at `path` (its first line).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            DataFusionError::Configuration(format!(
                "reading the token file {}: {e}",
                path.display()
            ))
        })?;
        Token::new(text.lines().next().unwrap_or(""))
    }

    /// The `authorization` header value that carries it.
    fn header(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether `header` (an `authorization` value) carries this token, compared in constant
    /// time (for equal lengths; a length differs in its first check only).
    fn accepts(&self, header: Option<&[u8]>) -> bool {
        let want = self.header();
        let Some(got) = header else { return false };
        if got.len() != want.len() {
            return false;
        }
        let diff = got
            .iter()
            .zip(want.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// Make ring rustls's process-wide provider, unless one is installed: with both of rustls's
/// providers compiled in (object stores' HTTP clients bring aws-lc-rs), rustls picks none, and
/// tonic's TLS then panics on the first connection.
fn crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// PEM bytes read from a file, for errors that name it.
fn pem(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        DataFusionError::Configuration(format!("reading the {what} {}: {e}", path.display()))
    })
}

/// A worker's TLS: its certificate chain and key, and the CA its clients must present a
/// certificate of (mutual TLS), if any.
#[derive(Clone, Debug)]
pub struct ServerTls {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}

impl ServerTls {
    /// TLS from PEM files: the worker's certificate (chain) and key, and the CA clients'
    /// certificates must chain to (`None`: clients are not asked for one).
    pub fn from_files(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Self> {
        Ok(ServerTls {
            cert: pem(cert, "certificate")?,
            key: pem(key, "key")?,
            client_ca: client_ca.map(|p| pem(p, "client CA")).transpose()?,
        })
    }

    fn config(&self) -> tonic::transport::ServerTlsConfig {
        crypto_provider();
        let identity = tonic::transport::Identity::from_pem(&self.cert, &self.key);
        let tls = tonic::transport::ServerTlsConfig::new().identity(identity);
        match &self.client_ca {
            Some(ca) => tls.client_ca_root(tonic::transport::Certificate::from_pem(ca)),
            None => tls,
        }
    }
}

/// What a client presents to workers: a token, and for `https://` URLs the CA the workers'
/// certificates chain to and its own certificate (mutual TLS).
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    token: Option<Token>,
    ca: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl Credentials {
    /// No credentials: plaintext `http://` workers without authentication.
    pub fn none() -> Self {
        Credentials::default()
    }

    /// Present this bearer token on every call.
    pub fn token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// Trust workers' certificates that chain to this CA (PEM file) rather than the system's.
    pub fn ca_file(mut self, path: &Path) -> Result<Self> {
        self.ca = Some(pem(path, "CA")?);
        Ok(self)
    }

    /// Present this certificate and key (PEM files) to workers that ask for one.
    pub fn identity_files(mut self, cert: &Path, key: &Path) -> Result<Self> {
        self.identity = Some((pem(cert, "certificate")?, pem(key, "key")?));
        Ok(self)
    }

    /// Whether any credential is set.
    pub fn is_empty(&self) -> bool {
        self.token.is_none() && self.ca.is_none() && self.identity.is_none()
    }

    fn tls(&self) -> tonic::transport::ClientTlsConfig {
        crypto_provider();
        let mut tls = tonic::transport::ClientTlsConfig::new();
        if let Some(ca) = &self.ca {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &self.identity {
            tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
        }
        tls
    }
}

/// A worker's limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest gRPC message it decodes (a plan, a batch of work units), in bytes.
    pub max_message_bytes: usize,
    /// Calls it serves at once (every task's streams count); past that a call is refused.
    pub max_calls: usize,
    /// Its DataFusion memory pool (`None`: unbounded, as DataFusion's default).
    pub memory_limit: Option<usize>,
    /// HTTP/2 keepalive: a peer that does not answer a ping within this is dropped.
    pub keepalive: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 64 << 20,
            max_calls: 512,
            memory_limit: None,
            keepalive: Duration::from_secs(20),
        }
    }
}

/// What a guarded worker lets in (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct WorkerGuard {
    /// The bearer token every call must carry, if any.
    pub token: Option<Token>,
    /// TLS (and mutual TLS), if any.
    pub tls: Option<ServerTls>,
    /// Where units may read.
    pub roots: Roots,
    /// The workers a plan may have this worker dial (shuffles), and what it presents to them.
    pub peers: Vec<Url>,
    /// What this worker presents when it dials a peer (its token, client certificate, CA).
    pub peer_credentials: Credentials,
    /// Message size, concurrent calls, memory pool, keepalive.
    pub limits: Limits,
}

impl WorkerGuard {
    /// Whether callers must authenticate (a token or client certificates).
    pub fn authenticates(&self) -> bool {
        self.token.is_some() || self.tls.as_ref().is_some_and(|t| t.client_ca.is_some())
    }

    /// The tonic interceptor checking the token on every call.
    pub(crate) fn interceptor(
        &self,
    ) -> impl FnMut(tonic::Request<()>) -> std::result::Result<tonic::Request<()>, tonic::Status> + Clone
    {
        let token = self.token.clone();
        move |req: tonic::Request<()>| match &token {
            None => Ok(req),
            Some(t) => {
                let got = req.metadata().get("authorization").map(|v| v.as_bytes());
                if t.accepts(got) {
                    Ok(req)
                } else {
                    Err(tonic::Status::unauthenticated(
                        "this rayquet worker needs its bearer token",
                    ))
                }
            }
        }
    }

    pub(crate) fn tls_config(&self) -> Option<tonic::transport::ServerTlsConfig> {
        self.tls.as_ref().map(ServerTls::config)
    }
}

// ---------------------------------------------------------------------------------------------
// Plans

/// The operators a rayquet query's stages hold (by `ExecutionPlan::name`): rayquet's scan,
/// DataFusion's compute operators, datafusion-distributed's network and task nodes. None of them
/// reads or writes a file; `DataSourceExec` is let in only for in-memory data (`VALUES`).
pub const ALLOWED: &[&str] = &[
    "RayquetScanExec",
    // DataFusion: projections, filters, aggregates, joins, sorts, limits, repartitions.
    "ProjectionExec",
    "FilterExec",
    "AggregateExec",
    "HashJoinExec",
    "SortMergeJoinExec",
    "SymmetricHashJoinExec",
    "NestedLoopJoinExec",
    "CrossJoinExec",
    "SortExec",
    "PartialSortExec",
    "SortPreservingMergeExec",
    "CoalescePartitionsExec",
    "CoalesceBatchesExec",
    "RepartitionExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    "UnionExec",
    "InterleaveExec",
    "WindowAggExec",
    "BoundedWindowAggExec",
    "UnnestExec",
    "EmptyExec",
    "PlaceholderRowExec",
    "CooperativeExec",
    "AsyncFuncExec",
    "BufferExec",
    // datafusion-distributed.
    "NetworkShuffleExec",
    "NetworkCoalesceExec",
    "NetworkBroadcastExec",
    "BroadcastExec",
    "PartitionIsolatorExec",
    "SamplerExec",
    "WorkUnitFeedExec",
];

/// Check a plan a worker received (see the module docs): every node one of [`ALLOWED`] (or an
/// in-memory data source); otherwise an error naming the node.
pub fn check_plan(plan: &Arc<dyn ExecutionPlan>) -> Result<()> {
    let mut stack = vec![Arc::clone(plan)];
    while let Some(p) = stack.pop() {
        let name = p.name();
        let allowed = ALLOWED.contains(&name)
            || p.downcast_ref::<DataSourceExec>()
                .is_some_and(|d| d.data_source().is::<MemorySourceConfig>());
        if !allowed {
            let what = match name {
                "DataSourceExec" => "a file scan of DataFusion's own, not rayquet's",
                "DataSinkExec" => "a sink (it writes files)",
                _ => "an operator a rayquet worker does not run",
            };
            return Err(DataFusionError::Plan(format!(
                "refused by this rayquet worker: the plan holds {name} ({what}): {}",
                one_line(&p)
            )));
        }
        stack.extend(p.children().into_iter().cloned());
    }
    Ok(())
}

/// A node's one-line display.
fn one_line(p: &Arc<dyn ExecutionPlan>) -> String {
    let shown = datafusion::physical_plan::displayable(p.as_ref())
        .one_line()
        .to_string();
    shown.trim().chars().take(300).collect()
}

// ---------------------------------------------------------------------------------------------
// Roots

/// A root units may read under.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Root {
    /// A local directory, canonical (symlinks resolved).
    Local(PathBuf),
    /// An object-store prefix: `scheme://authority` and the path's segments.
    Url { base: String, segments: Vec<String> },
}

/// Where a worker's units may read (`--allow`): local directories and object-store prefixes.
/// Empty: object-store URLs only, no local file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roots(Vec<Root>);

impl Roots {
    /// Roots from `specs`: local directories (which must exist) or URLs (`s3://bucket/prefix`,
    /// `gs://...`, `az://...`, `file:///...`).
    pub fn parse(specs: &[String]) -> Result<Self> {
        let mut roots = Vec::new();
        for s in specs {
            let root = match url_of(s) {
                Some(u) if u.scheme() == "file" => {
                    let p = u
                        .to_file_path()
                        .map_err(|_| bad_root(s, "not a local path"))?;
                    Root::Local(canonical_dir(&p).map_err(|e| bad_root(s, &e))?)
                }
                Some(u) => {
                    let (base, segments) =
                        url_parts(&u).ok_or_else(|| bad_root(s, "a URL with `..`"))?;
                    Root::Url { base, segments }
                }
                None => Root::Local(canonical_dir(Path::new(s)).map_err(|e| bad_root(s, &e))?),
            };
            roots.push(root);
        }
        Ok(Roots(roots))
    }

    /// Whether any root is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when `location` (a path or URL a unit reads) lies under a root, after normalising it;
    /// otherwise an error naming it.
    pub fn check(&self, location: &str) -> Result<()> {
        let refused = |why: &str| {
            DataFusionError::Plan(format!(
                "refused by this rayquet worker: {location:?} {why}"
            ))
        };
        match url_of(location) {
            Some(u) if u.scheme() == "file" => {
                let p = u
                    .to_file_path()
                    .map_err(|_| refused("is not a local path"))?;
                self.check_local(&p).map_err(|e| refused(&e))
            }
            Some(u) if u.scheme() == "memory" => Err(refused("is in memory")),
            Some(u) => {
                let (base, segments) =
                    url_parts(&u).ok_or_else(|| refused("climbs out of its prefix (`..`)"))?;
                if self.0.is_empty() {
                    return Ok(());
                }
                let under = self.0.iter().any(|r| match r {
                    Root::Url {
                        base: b,
                        segments: s,
                    } => *b == base && segments.starts_with(s),
                    Root::Local(_) => false,
                });
                match under {
                    true => Ok(()),
                    false => Err(refused("is not under a root this worker reads (--allow)")),
                }
            }
            None => self
                .check_local(Path::new(location))
                .map_err(|e| refused(&e)),
        }
    }

    fn check_local(&self, path: &Path) -> std::result::Result<(), String> {
        if !self.0.iter().any(|r| matches!(r, Root::Local(_))) {
            return Err("is a local file, and this worker reads none (--allow a directory)".into());
        }
        let real = real_path(path)?;
        let under = self.0.iter().any(|r| match r {
            Root::Local(root) => real.starts_with(root),
            Root::Url { .. } => false,
        });
        match under {
            true => Ok(()),
            false => Err(format!(
                "is {}, not under a root this worker reads (--allow)",
                real.display()
            )),
        }
    }
}

fn bad_root(spec: &str, why: &str) -> DataFusionError {
    DataFusionError::Configuration(format!("--allow {spec}: {why}"))
}

/// `s` as a URL, when it has a scheme of more than one letter (`C:` is a Windows drive).
fn url_of(s: &str) -> Option<Url> {
    let (scheme, _) = s.split_once("://")?;
    (scheme.len() > 1).then(|| Url::parse(s).ok()).flatten()
}

/// `scheme://authority` and the decoded, normalised segments of `u`'s path; `None` when a
/// `..` climbs above its start.
fn url_parts(u: &Url) -> Option<(String, Vec<String>)> {
    let base = format!("{}://{}", u.scheme(), u.authority());
    let mut out: Vec<String> = Vec::new();
    for seg in u.path().split('/') {
        let seg = percent_decode(seg);
        match seg.as_str() {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            _ => out.push(seg),
        }
    }
    Some((base, out))
}

/// `s` with `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A root directory, canonical.
fn canonical_dir(p: &Path) -> std::result::Result<PathBuf, String> {
    let c = p
        .canonicalize()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if !c.is_dir() {
        return Err(format!("{} is not a directory", c.display()));
    }
    Ok(c)
}

/// Where `path` really is: `..` and `.` resolved lexically from an absolute path, then the
/// longest existing ancestor canonicalised (its symlinks resolved) and the rest appended.
fn real_path(path: &Path) -> std::result::Result<PathBuf, String> {
    if !path.is_absolute() {
        return Err("is a relative path".into());
    }
    let mut lexical = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
            break;
        };
        rest.push(name);
        existing.pop();
    }
    let mut real = existing
        .canonicalize()
        .map_err(|e| format!("{}: {e}", existing.display()))?;
    for n in rest.into_iter().rev() {
        real.push(n);
    }
    Ok(real)
}

// ---------------------------------------------------------------------------------------------
// Channels

/// Channels to workers presenting [`Credentials`] (TLS for `https://` URLs, the token on every
/// call), one per URL; with `peers`, only to those URLs. Installed on the coordinator's session
/// and on each guarded worker's (which dials its peers for shuffles).
#[derive(Clone)]
pub struct SecureChannels {
    credentials: Credentials,
    peers: Option<Arc<HashSet<String>>>,
    channels: Arc<Mutex<std::collections::HashMap<String, BoxCloneSyncChannel>>>,
}

impl SecureChannels {
    /// Channels presenting `credentials` to any URL (a coordinator's: its own `--workers`).
    pub fn new(credentials: Credentials) -> Self {
        SecureChannels {
            credentials,
            peers: None,
            channels: Default::default(),
        }
    }

    /// Only to these URLs (a worker's peers); a URL without a port allows every port of its
    /// host (`http://10.0.0.5`).
    pub fn only(mut self, peers: &[Url]) -> Self {
        self.peers = Some(Arc::new(
            peers
                .iter()
                .map(|u| match u.port() {
                    Some(_) => normal_url(u),
                    None => host_of(u),
                })
                .collect(),
        ));
        self
    }

    async fn channel(&self, url: &Url) -> Result<BoxCloneSyncChannel> {
        let key = normal_url(url);
        if let Some(peers) = &self.peers {
            if !peers.contains(&key) && !peers.contains(&host_of(url)) {
                return Err(DataFusionError::Plan(format!(
                    "refused by this rayquet worker: the plan has it dial {url}, which is not \
                     one of its peers (--peer)"
                )));
            }
        }
        if let Some(c) = self
            .channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(c.clone());
        }
        let connect_err = |e: tonic::transport::Error| {
            DataFusionError::Execution(format!("connecting to the rayquet worker {url}: {e:?}"))
        };
        let mut endpoint = tonic::transport::Channel::from_shared(url.to_string())
            .map_err(|e| DataFusionError::Configuration(format!("worker URL {url}: {e}")))?
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(20));
        if url.scheme() == "https" {
            endpoint = endpoint
                .tls_config(self.credentials.tls())
                .map_err(connect_err)?;
        }
        let channel = endpoint.connect().await.map_err(connect_err)?;
        let header = self
            .credentials
            .token
            .as_ref()
            .map(|t| http::HeaderValue::from_str(&t.header()))
            .transpose()
            .map_err(|e| DataFusionError::Configuration(format!("the worker token: {e}")))?;
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<tonic::body::Body>| {
                if let Some(h) = &header {
                    req.headers_mut()
                        .insert(http::header::AUTHORIZATION, h.clone());
                }
                req
            })
            .service(channel);
        let boxed = BoxCloneSyncChannel::new(service);
        self.channels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, boxed.clone());
        Ok(boxed)
    }
}

/// A URL's scheme and host, any port: a peer given without a port.
fn host_of(u: &Url) -> String {
    format!("{}://{}:*", u.scheme(), u.host_str().unwrap_or(""))
}

/// A URL as compared with a peer list: scheme, host and port, no trailing slash.
fn normal_url(u: &Url) -> String {
    format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str().unwrap_or(""),
        u.port_or_known_default().unwrap_or(0)
    )
}

#[async_trait::async_trait]
impl ChannelResolver for SecureChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>> {
        self.channel(url).await.map(create_worker_client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_compared_whole() {
        let t = Token::new("0123456789abcdef-secret").unwrap();
        assert!(t.accepts(Some(b"Bearer 0123456789abcdef-secret")));
        assert!(!t.accepts(Some(b"Bearer 0123456789abcdef-secreT")));
        assert!(!t.accepts(Some(b"Bearer 0123456789abcdef-secre")));
        assert!(!t.accepts(Some(b"0123456789abcdef-secret")));
        assert!(!t.accepts(None));
        assert!(Token::new("short").is_err());
        assert!(Token::new("with a space in it, long enough").is_err());
        assert_eq!(format!("{t:?}"), "Token(..)");
    }

    /// The physical plan of `sql` in a local session with a CSV table `t` at `csv`.
    async fn plan_of(sql: &str, csv: &Path) -> Arc<dyn ExecutionPlan> {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_csv("t", csv.to_str().unwrap(), Default::default())
            .await
            .unwrap();
        let df = ctx.sql(sql).await.unwrap();
        df.create_physical_plan().await.unwrap()
    }

    #[tokio::test]
    async fn plans_with_file_scans_or_sinks_of_datafusion_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        std::fs::write(&csv, "a,b\n1,x\n2,y\n").unwrap();
        let out = dir.path().join("out.csv");
        // Compute over in-memory rows: allowed.
        let ok = plan_of(
            "SELECT column1 % 2 AS k, count(*) FROM (VALUES (1), (2), (3)) GROUP BY 1 ORDER BY 1",
            &csv,
        )
        .await;
        check_plan(&ok).unwrap();
        // A CSV scan, and a sink writing a file: refused, naming the node.
        let scan = plan_of("SELECT a FROM t WHERE b <> 'z'", &csv).await;
        let e = check_plan(&scan).unwrap_err().to_string();
        assert!(
            e.contains("DataSourceExec") && e.contains("file scan"),
            "{e}"
        );
        let copy = format!("COPY (SELECT 1 AS a) TO '{}' STORED AS CSV", out.display());
        let sink = plan_of(&copy, &csv).await;
        let e = check_plan(&sink).unwrap_err().to_string();
        assert!(e.contains("DataSinkExec") && e.contains("sink"), "{e}");
        assert!(!out.exists());
    }

    #[tokio::test]
    async fn workers_dial_only_their_peers() {
        let peers = [
            Url::parse("http://127.0.0.1:1").unwrap(),
            Url::parse("http://10.255.255.1").unwrap(),
        ];
        let channels = SecureChannels::new(Credentials::none()).only(&peers);
        for url in [
            "http://127.0.0.2:1",
            "http://127.0.0.1:2",
            "https://127.0.0.1:1",
        ] {
            let Err(e) = channels.channel(&Url::parse(url).unwrap()).await else {
                panic!("{url}: dialed");
            };
            let e = e.to_string();
            assert!(e.contains("not one of its peers"), "{url}: {e}");
        }
        // A peer (nothing listens on port 1): past the check, the connection fails.
        let Err(e) = channels.channel(&peers[0]).await else {
            panic!("nothing listens on port 1");
        };
        let e = e.to_string();
        assert!(e.contains("connecting to the rayquet worker"), "{e}");
    }

    #[test]
    fn units_read_only_under_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("lake");
        std::fs::create_dir_all(root.join("t")).unwrap();
        std::fs::write(dir.path().join("secret.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("escape")).unwrap();
        let roots = Roots::parse(&[
            root.display().to_string(),
            "s3://bucket/warehouse/db".to_string(),
        ])
        .unwrap();
        let r = root.display().to_string();
        assert!(roots.check(&format!("{r}/t/part-0.parquet")).is_ok());
        assert!(roots.check(&format!("file://{r}/t/part-0.parquet")).is_ok());
        assert!(roots.check(&format!("{r}/t/../t/x.parquet")).is_ok());
        for bad in [
            format!("{r}/../secret.parquet"),
            format!("file://{r}/t/%2E%2E/%2E%2E/secret.parquet"),
            format!("{r}/escape/secret.parquet"),
            "/etc/passwd".to_string(),
            "relative/x.parquet".to_string(),
            "s3://bucket/warehouse/other/x.parquet".to_string(),
            "s3://bucket/warehouse/db/../../other/x.parquet".to_string(),
            "s3://bucket/warehouse/db/%2E%2E/x.parquet".to_string(),
            "s3://other/warehouse/db/x.parquet".to_string(),
            "memory:///x.parquet".to_string(),
        ] {
            let e = roots.check(&bad).unwrap_err().to_string();
            assert!(e.contains("refused by this rayquet worker"), "{bad}: {e}");
        }
        assert!(roots.check("s3://bucket/warehouse/db/t/x.parquet").is_ok());
        assert!(roots.check("s3://bucket/warehouse/db2/x.parquet").is_err());
        // No root: object stores only.
        let none = Roots::default();
        assert!(none.check("s3://any/x.parquet").is_ok());
        assert!(none.check(&format!("{r}/t/part-0.parquet")).is_err());
        assert!(none.check(&format!("file://{r}/t/part-0.parquet")).is_err());
        assert!(none.check("memory:///x.parquet").is_err());
    }
}
