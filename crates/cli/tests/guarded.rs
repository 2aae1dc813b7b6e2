//! Guarded `rayquet worker` processes, as a security review would try them: a worker on a
//! non-loopback address refuses to start without credentials; calls without the token, with a
//! wrong one, or over TLS with a certificate of another CA are refused; a rogue coordinator's
//! plan with a file scan of DataFusion's own is refused before the file is read; a unit that
//! climbs out of the worker's roots (`..`, a symlink) is refused; an oversized message is
//! refused and the worker answers the next query; and a coordinator with the token and mutual
//! TLS gets the same answer as the in-process run.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rayquet_datafusion::datafusion::prelude::SessionContext;

mod common;
use common::{ca, leaf, write, Tls, Worker};

/// A token of the tests' workers.
const TOKEN: &str = "test-token-0123456789abcdef";

fn rayquet(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(args)
        .env_remove("RAYQUET_WORKER_TOKEN")
        .envs(env.iter().copied())
        .output()
        .expect("run rayquet")
}

/// A small dataset (`rayquet gen`) under `dir/data`, and a token file `dir/token`.
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let data = dir.join("data");
    let out = rayquet(
        &[
            "gen",
            data.to_str().unwrap(),
            "--files",
            "3",
            "--rows",
            "3000",
            "--row-groups",
            "2",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    (data, token)
}

const QUERY: &str = "SELECT l_returnflag, count(*) AS n, sum(l_linenumber) AS s FROM t \
                     GROUP BY 1 ORDER BY 1";

/// The result rows of `rayquet sql QUERY --json` over table `t` at `data`, with `extra`
/// arguments.
fn sql(data: &Path, extra: &[&str]) -> Result<serde_json::Value, String> {
    let table = format!("t={}", data.display());
    let mut args = vec![
        "sql",
        QUERY,
        "--parquet",
        &table,
        "--json",
        "--max-rows",
        "0",
    ];
    args.extend_from_slice(extra);
    let out = rayquet(&args, &[]);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}"))?;
    Ok(v["result"].clone())
}

#[test]
fn a_worker_on_a_public_address_needs_credentials() {
    let out = rayquet(&["worker", "--listen", "0.0.0.0:0"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without authentication"), "{stderr}");
    assert!(stderr.contains("--token-file"), "{stderr}");
    // --insecure starts it, saying so.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(["worker", "--listen", "0.0.0.0:0", "--insecure"])
        .env_remove("RAYQUET_WORKER_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("rayquet worker listening on http://0.0.0.0:"),
        "{line}"
    );
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("WARNING") && stderr.contains("--insecure"),
        "{stderr}"
    );
    // A token (from the environment) is enough.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(["worker", "--listen", "0.0.0.0:0"])
        .env("RAYQUET_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("rayquet worker listening on"), "{line}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn calls_without_the_token_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (data, token) = setup(dir.path());
    let root = dir.path().to_str().unwrap();
    let w = Worker::start(&["--token-file", token.to_str().unwrap(), "--allow", root]).unwrap();
    let local = sql(&data, &[]).unwrap();
    // No token, a wrong one.
    let e = sql(&data, &["--workers", &w.url]).unwrap_err();
    assert!(
        e.contains("bearer token") || e.contains("Unauthenticated"),
        "{e}"
    );
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "another-token-0123456789").unwrap();
    let e = sql(
        &data,
        &["--workers", &w.url, "--token-file", wrong.to_str().unwrap()],
    )
    .unwrap_err();
    assert!(
        e.contains("bearer token") || e.contains("Unauthenticated"),
        "{e}"
    );
    // The right one: the in-process answer.
    let got = sql(
        &data,
        &["--workers", &w.url, "--token-file", token.to_str().unwrap()],
    )
    .unwrap();
    assert_eq!(got, local);
}

#[test]
fn mutual_tls_admits_only_certificates_of_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (data, token) = setup(d);
    let (tls, _) = Tls::new(d);
    let (theirs, theirs_pem) = ca("another CA");
    let (other_cert, other_key) = leaf(&theirs, false);
    let other_ca = write(d, "other-ca.pem", &theirs_pem);
    let token = token.to_str().unwrap();
    let mut args = tls.worker_args().to_vec();
    args.extend(["--token-file", token, "--allow", d.to_str().unwrap()]);
    let w = Worker::start(&args).unwrap();
    assert!(w.url.starts_with("https://"), "{}", w.url);
    let local = sql(&data, &[]).unwrap();
    let ca_file = &tls.ca;
    let client = (&tls.client_cert, &tls.client_key);
    let other = (
        write(d, "other.pem", &other_cert),
        write(d, "other.key", &other_key),
    );
    let ok = [
        "--workers",
        &w.url,
        "--token-file",
        token,
        "--tls-ca",
        ca_file,
    ];
    // The right CA, certificate and token: the in-process answer.
    let args: Vec<&str> = ok
        .iter()
        .copied()
        .chain(["--tls-cert", client.0, "--tls-key", client.1])
        .collect();
    assert_eq!(sql(&data, &args).unwrap(), local);
    // No client certificate; one of another CA; the worker's certificate not trusted.
    let e = sql(&data, &ok).unwrap_err();
    assert!(e.starts_with("error: "), "{e}");
    let args: Vec<&str> = ok
        .iter()
        .copied()
        .chain(["--tls-cert", &other.0, "--tls-key", &other.1])
        .collect();
    let e = sql(&data, &args).unwrap_err();
    assert!(e.starts_with("error: "), "{e}");
    let e = sql(
        &data,
        &[
            "--workers",
            &w.url,
            "--token-file",
            token,
            "--tls-ca",
            &other_ca,
            "--tls-cert",
            client.0,
            "--tls-key",
            client.1,
        ],
    )
    .unwrap_err();
    assert!(e.starts_with("error: "), "{e}");
    // Plaintext to a TLS worker.
    let plain = w.url.replacen("https://", "http://", 1);
    let e = sql(&data, &["--workers", &plain, "--token-file", token]).unwrap_err();
    assert!(e.starts_with("error: "), "{e}");
}

#[test]
fn units_outside_the_roots_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (data, token) = setup(d);
    // The worker reads only under `lake/`; `data/` lies beside it, reachable by `..` and by a
    // symlink inside the lake.
    let lake = d.join("lake");
    std::fs::create_dir_all(lake.join("t")).unwrap();
    std::os::unix::fs::symlink(&data, lake.join("link")).unwrap();
    let w = Worker::start(&[
        "--token-file",
        token.to_str().unwrap(),
        "--allow",
        lake.to_str().unwrap(),
    ])
    .unwrap();
    let token = token.to_str().unwrap();
    for path in [data.clone(), lake.join("t/../../data"), lake.join("link")] {
        let e = sql(&path, &["--workers", &w.url, "--token-file", token]).unwrap_err();
        assert!(
            e.contains("refused by this rayquet worker"),
            "{}: {e}",
            path.display()
        );
        assert!(e.contains("not under a root"), "{}: {e}", path.display());
    }
    // Inside the lake: read.
    std::fs::rename(&data, lake.join("t/data")).unwrap();
    let rows = sql(
        &lake.join("t/data"),
        &["--workers", &w.url, "--token-file", token],
    )
    .unwrap();
    assert!(!rows.as_array().unwrap().is_empty());
}

/// A rogue coordinator: a datafusion-distributed session of its own (not rayquet's), with the
/// token, whose CSV table (DataFusion's own file scan) it would have the worker read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_with_a_file_scan_of_datafusion_is_refused() {
    use rayquet_datafusion::datafusion;
    use rayquet_datafusion::datafusion_distributed::{
        DistributedExt, SessionStateBuilderExt, WorkerResolver,
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let token = d.join("token");
    std::fs::write(&token, TOKEN).unwrap();
    // Two files, so that the scan is two tasks and its stage runs on the worker.
    let secret = d.join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    let content = "name,value\nroot,s3cr3t\nadmin,hunter2\n";
    for f in ["a.csv", "b.csv"] {
        std::fs::write(secret.join(f), content).unwrap();
    }
    let lake = d.join("lake");
    std::fs::create_dir_all(&lake).unwrap();
    let w = Worker::start(&[
        "--token-file",
        token.to_str().unwrap(),
        "--allow",
        lake.to_str().unwrap(),
    ])
    .unwrap();
    #[derive(Debug, Clone)]
    struct One(url::Url);
    impl WorkerResolver for One {
        fn get_urls(&self) -> Result<Vec<url::Url>, datafusion::error::DataFusionError> {
            Ok(vec![self.0.clone()])
        }
    }
    let url = url::Url::parse(&w.url).unwrap();
    let credentials = rayquet_datafusion::guard::Credentials::none()
        .token(rayquet_datafusion::guard::Token::new(TOKEN).unwrap());
    let state = datafusion::execution::SessionStateBuilder::new()
        .with_default_features()
        .with_distributed_worker_resolver(One(url))
        .with_distributed_channel_resolver(rayquet_datafusion::guard::SecureChannels::new(
            credentials,
        ))
        .with_distributed_planner()
        .with_distributed_max_tasks_per_stage(2)
        .unwrap()
        .with_distributed_file_scan_config_bytes_per_partition(1)
        .unwrap()
        .build();
    let ctx = SessionContext::from(state);
    ctx.register_csv("secret", secret.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    let e = ctx
        .sql("SELECT name, max(value) FROM secret GROUP BY name")
        .await
        .unwrap()
        .collect()
        .await
        .expect_err("the worker refuses the plan")
        .to_string();
    assert!(e.contains("refused by this rayquet worker"), "{e}");
    assert!(e.contains("DataSourceExec"), "{e}");
    // The files are as they were.
    for f in ["a.csv", "b.csv"] {
        assert_eq!(std::fs::read_to_string(secret.join(f)).unwrap(), content);
    }
}

#[test]
fn an_oversized_message_is_refused_and_the_worker_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (data, token) = setup(dir.path());
    let root = dir.path().to_str().unwrap();
    let w = Worker::start(&[
        "--token-file",
        token.to_str().unwrap(),
        "--allow",
        root,
        "--max-message-size",
        "32K",
    ])
    .unwrap();
    let token = token.to_str().unwrap();
    // A filter of 4,000 values: a plan of more than 32 KiB.
    let values: Vec<String> = (0..4000).map(|i| (i * 7).to_string()).collect();
    let big = format!(
        "SELECT count(*) AS n FROM t WHERE l_orderkey IN ({})",
        values.join(",")
    );
    let table = format!("t={}", data.display());
    let out = rayquet(
        &[
            "sql",
            &big,
            "--parquet",
            &table,
            "--workers",
            &w.url,
            "--token-file",
            token,
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The worker refuses the plan's message; datafusion-distributed 3.0 drops that status on
    // the coordinator's side, so what the query ends with is the worker's wait for the plan.
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("too large") || e.contains("waiting for the plan"),
        "{e}"
    );
    // The worker still answers.
    let local = sql(&data, &[]).unwrap();
    assert_eq!(
        sql(&data, &["--workers", &w.url, "--token-file", token]).unwrap(),
        local
    );
}

/// The 8 TPC-H tables at scale factor 0.01 (tpchgen-cli, in a venv; made once per target dir).
fn tpch_tables() -> PathBuf {
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tpch/requirements.txt");
    let python = rayquet_testkit::python::venv(&requirements);
    rayquet_testkit::python::generated("tpch-sf0.01", &[&requirements], |dir| {
        let cli = python.with_file_name("tpchgen-cli");
        let out = Command::new(&cli)
            .args(["parquet", "--scale-factor", "0.01", "--output-dir"])
            .arg(dir)
            .output()
            .map_err(|e| format!("{}: {e}", cli.display()))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    })
}

/// Rows as text, sorted; floats to 9 significant digits (summation order differs by plan).
fn rows_of(batches: &[arrow::array::RecordBatch]) -> Vec<String> {
    let opts = arrow::util::display::FormatOptions::default();
    let mut rows: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let fmts: Vec<_> = b
                .columns()
                .iter()
                .map(|c| arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
                .collect();
            (0..b.num_rows())
                .map(|r| {
                    fmts.iter()
                        .map(|f| {
                            let v = f.value(r).to_string();
                            match v.parse::<f64>() {
                                Ok(x) if v.contains('.') || v.contains('e') => format!("{x:.9e}"),
                                _ => v,
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect::<Vec<_>>()
        })
        .collect();
    rows.sort();
    rows
}

/// The 22 TPC-H queries on three worker processes with mutual TLS and a token (each dialing
/// the others for shuffles, over TLS with the same credentials): the same rows as DataFusion's
/// in this process over parquet's own reader's rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_on_three_tls_workers_matches_datafusion() {
    use rayquet_datafusion::datafusion;
    use std::sync::Arc;
    let data = tpch_tables();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let token = write(d, "token", TOKEN);
    let (tls, _) = Tls::new(d);
    let root = data.to_str().unwrap();
    let mut worker_args = tls.worker_args().to_vec();
    worker_args.extend(["--token-file", &token, "--allow", root]);
    worker_args.extend(["--peer", "https://127.0.0.1"]);
    let workers: Vec<Worker> = (0..3)
        .map(|_| Worker::start(&worker_args).unwrap())
        .collect();
    let urls: Vec<&str> = workers.iter().map(|w| w.url.as_str()).collect();
    assert!(urls.iter().all(|u| u.starts_with("https://")), "{urls:?}");
    let urls = urls.join(",");
    const TABLES: [&str; 8] = [
        "customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier",
    ];
    let reference = SessionContext::new();
    let mut tables = Vec::new();
    for t in TABLES {
        let path = data.join(format!("{t}.parquet"));
        assert!(path.is_file(), "{} (tpchgen-cli's output)", path.display());
        // parquet's own reader's rows, as a DataFusion table.
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(&path).unwrap(),
        )
        .unwrap()
        .build()
        .unwrap();
        let schema = arrow::array::RecordBatchReader::schema(&reader);
        let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
        let table = datafusion::datasource::MemTable::try_new(schema, vec![batches]).unwrap();
        reference.register_table(t, Arc::new(table)).unwrap();
        tables.push(format!("{t}={}", path.display()));
    }
    let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/tpch/queries");
    let mut checked = 0;
    for n in 1..=22 {
        let path = queries.join(format!("q{n}.sql"));
        let sql = std::fs::read_to_string(&path).unwrap();
        let expected = rayquet_datafusion::collect_sql(&reference, &sql)
            .await
            .unwrap_or_else(|e| panic!("q{n} in DataFusion: {e}"));
        let out = d.join(format!("q{n}.arrow"));
        let mut args = vec!["sql", "-f", path.to_str().unwrap()];
        for t in &tables {
            args.extend(["--parquet", t.as_str()]);
        }
        args.extend(["--workers", &urls, "--token-file", &token]);
        args.extend(tls.client_args());
        args.extend(["--out", out.to_str().unwrap(), "--max-rows", "0"]);
        let o = rayquet(&args, &[]);
        assert!(
            o.status.success(),
            "q{n}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got: Vec<_> =
            arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&out).unwrap(), None)
                .unwrap()
                .map(|b| b.unwrap())
                .collect();
        let (got, expected) = (rows_of(&got), rows_of(&expected));
        assert!(!expected.is_empty() || n == 15, "q{n}: no rows at SF 0.01");
        assert_eq!(got, expected, "q{n}");
        checked += 1;
    }
    assert_eq!(checked, 22);
}

/// A network of namespaces for [`queries_cross_a_real_network_stack`]: a bridge in this
/// namespace and a veth pair to each namespace; removed (with every process in them) on drop.
struct Namespaces {
    names: Vec<String>,
    bridge: String,
}

impl Namespaces {
    /// `n` namespaces `<prefix>0..n`, at `<net>.10+i`, the bridge at `<net>.1`.
    fn new(prefix: &str, net: &str, n: usize) -> Result<Namespaces, String> {
        let ip = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| e.to_string())?;
            match out.status.success() {
                true => Ok(()),
                false => Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                )),
            }
        };
        let me = Namespaces {
            names: (0..n).map(|i| format!("{prefix}{i}")).collect(),
            bridge: format!("{prefix}br"),
        };
        ip(&["link", "add", &me.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{net}.1/24"), "dev", &me.bridge])?;
        ip(&["link", "set", &me.bridge, "up"])?;
        for (i, ns) in me.names.iter().enumerate() {
            let host_end = format!("{ns}v");
            ip(&["netns", "add", ns])?;
            ip(&[
                "link", "add", &host_end, "type", "veth", "peer", "name", "eth0", "netns", ns,
            ])?;
            ip(&["link", "set", &host_end, "master", &me.bridge, "up"])?;
            let addr = format!("{net}.{}/24", 10 + i);
            ip(&["-n", ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(me)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.names {
            let pids = Command::new("ip").args(["netns", "pids", ns]).output();
            for pid in pids
                .map(|o| o.stdout)
                .unwrap_or_default()
                .split(|b| *b == b'\n')
            {
                if let Ok(pid) = std::str::from_utf8(pid).unwrap_or("").trim().parse::<i32>() {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

/// A TCP proxy from `listen` to `upstream` holding every chunk `delay` before passing it on,
/// both ways, in order: a link's latency where `tc netem` is missing. Runs on the current
/// tokio runtime until the test ends.
async fn delay_proxy(
    listen: std::net::SocketAddr,
    upstream: std::net::SocketAddr,
    delay: std::time::Duration,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
    tokio::spawn(async move {
        while let Ok((down, _)) = listener.accept().await {
            let Ok(up) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            let _ = (down.set_nodelay(true), up.set_nodelay(true));
            let (dr, dw) = down.into_split();
            let (ur, uw) = up.into_split();
            for (mut r, mut w) in [(dr, uw), (ur, dw)] {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n @ 1..) = r.read(&mut buf).await {
                        let due = tokio::time::Instant::now() + delay;
                        if tx.send((due, buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                });
                tokio::spawn(async move {
                    while let Some((due, bytes)) = rx.recv().await {
                        tokio::time::sleep_until(due).await;
                        if w.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    let _ = w.shutdown().await;
                });
            }
        }
    });
}

/// Machines that are apart: the coordinator and three mutual-TLS workers each in a network
/// namespace of its own, every hop (coordinator to worker, worker to worker in shuffles)
/// through a proxy adding 1 ms, then 10 ms, each way; TPC-H queries with joins and shuffles
/// give the rows of the query in one process. Needs root (`ip netns`), as CI has; set
/// `RAYQUET_SKIP_NETNS=1` to skip it elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_cross_a_real_network_stack() {
    if std::env::var_os("RAYQUET_SKIP_NETNS").is_some() {
        eprintln!("skipped: RAYQUET_SKIP_NETNS is set");
        return;
    }
    let data = tpch_tables();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Names and a subnet of this run's own (interface names have at most 15 bytes).
    let pid = std::process::id();
    let prefix = format!("rq{}", pid % 100_000);
    let net = format!("10.{}.{}", 100 + pid % 100, (pid / 100) % 250);
    let ns = Namespaces::new(&prefix, &net, 4).unwrap_or_else(|e| {
        panic!("network namespaces (needs root; RAYQUET_SKIP_NETNS=1 skips this test): {e}")
    });
    let host = format!("{net}.1");
    let token = write(d, "token", TOKEN);
    // The workers' certificate names their addresses on the bridge.
    let (ca_issuer, ca_pem) = ca("rayquet netns CA");
    let mut p = rcgen::CertificateParams::new(vec![]).unwrap();
    p.subject_alt_names = std::iter::once(host.clone())
        .chain((11..14).map(|i| format!("{net}.{i}")))
        .map(|a| rcgen::SanType::IpAddress(a.parse().unwrap()))
        .collect();
    p.extended_key_usages = common::extended_key_usages(true);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca_issuer).unwrap().pem();
    let tls = Tls::of(d, &ca_issuer, &ca_pem, (&cert, &key.serialize_pem()));
    let rayquet_bin = env!("CARGO_BIN_EXE_rayquet");
    let tables: Vec<String> = [
        "customer", "lineitem", "nation", "orders", "region", "supplier",
    ]
    .iter()
    .map(|t| format!("{t}={}", data.join(format!("{t}.parquet")).display()))
    .collect();
    let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/tpch/queries");
    let run = |netns: Option<&str>, q: &str, extra: &[&str]| -> Vec<String> {
        let path = queries.join(format!("{q}.sql"));
        let mut cmd = match netns {
            Some(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", n, rayquet_bin]);
                c
            }
            None => Command::new(rayquet_bin),
        };
        cmd.args([
            "sql",
            "-f",
            path.to_str().unwrap(),
            "--json",
            "--max-rows",
            "0",
        ]);
        for t in &tables {
            cmd.args(["--parquet", t]);
        }
        let out = cmd
            .args(extra)
            .env_remove("RAYQUET_WORKER_TOKEN")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{q}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut rows: Vec<String> = v["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.to_string())
            .collect();
        rows.sort();
        rows
    };
    let queries = ["q3", "q5", "q10", "q13"];
    let local: Vec<Vec<String>> = queries.iter().map(|q| run(None, q, &[])).collect();
    for (delay, base) in [(1u64, 7100u16), (10, 7200)] {
        // The workers, each in its namespace, and a proxy to each on the bridge.
        let mut urls = Vec::new();
        let mut workers = Vec::new();
        for k in 1..=3 {
            let addr = format!("{net}.{}", 10 + k);
            let mut child = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &ns.names[k],
                    rayquet_bin,
                    "worker",
                    "--listen",
                ])
                .arg(format!("{addr}:{base}"))
                .args(tls.worker_args())
                .args(["--token-file", &token, "--allow", data.to_str().unwrap()])
                .args(["--peer", &format!("https://{host}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert!(line.contains("listening on https://"), "worker {k}: {line}");
            let proxy: std::net::SocketAddr =
                format!("{host}:{}", base + k as u16).parse().unwrap();
            let upstream = format!("{addr}:{base}").parse().unwrap();
            delay_proxy(proxy, upstream, std::time::Duration::from_millis(delay)).await;
            urls.push(format!("https://{proxy}"));
            workers.push(child);
        }
        let urls = urls.join(",");
        let mut creds = vec!["--workers", &urls, "--token-file", &token];
        creds.extend(tls.client_args());
        for (q, want) in queries.iter().zip(&local) {
            let got = tokio::task::block_in_place(|| run(Some(&ns.names[0]), q, &creds));
            assert!(!want.is_empty(), "{q}");
            assert_eq!(&got, want, "{q} at {delay} ms");
        }
        for mut w in workers {
            let _ = w.kill();
            let _ = w.wait();
        }
    }
    drop(ns);
}
