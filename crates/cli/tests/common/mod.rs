//! What the CLI's process tests share: `rayquet worker` processes ([`Worker`]) and the
//! mutual-TLS files of a test CA ([`Tls`]). Each test file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A `rayquet worker` process, killed when dropped.
pub struct Worker {
    pub child: Child,
    pub url: String,
}

impl Worker {
    /// A worker with these arguments after `--listen 127.0.0.1:0` (no token from the
    /// environment); its stderr when it exits instead of listening. Once it listens, its stderr
    /// goes on to the test's (drained by a thread: a full pipe would stall the worker).
    pub fn start(args: &[&str]) -> Result<Worker, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rayquet"))
            .args(["worker", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("RAYQUET_WORKER_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a worker");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the worker's first line");
        match line.trim().strip_prefix("rayquet worker listening on ") {
            Some(url) => {
                let mut stderr = child.stderr.take().unwrap();
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
                Ok(Worker {
                    url: url.to_string(),
                    child,
                })
            }
            None => {
                let out = child.wait_with_output().unwrap();
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA: its issuer and certificate (PEM).
pub fn ca(name: &str) -> (rcgen::Issuer<'static, rcgen::KeyPair>, String) {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    (rcgen::Issuer::new(p, key), cert.pem())
}

/// A certificate and key (PEM) signed by `ca`: a server's for 127.0.0.1 and localhost, or a
/// client's.
pub fn leaf(ca: &rcgen::Issuer<'static, rcgen::KeyPair>, server: bool) -> (String, String) {
    let names = match server {
        true => vec!["127.0.0.1".to_string(), "localhost".to_string()],
        false => vec!["coordinator".to_string()],
    };
    let mut p = rcgen::CertificateParams::new(names).unwrap();
    p.extended_key_usages = extended_key_usages(server);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A worker's certificate serves its port and, under mutual TLS, is what it presents to its
/// peers when it reads from them: both uses. A coordinator's is a client's.
pub fn extended_key_usages(server: bool) -> Vec<rcgen::ExtendedKeyUsagePurpose> {
    match server {
        true => vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ],
        false => vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth],
    }
}

/// `text` written to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The files of mutual TLS between workers and a coordinator, all of one CA: paths of the CA's
/// certificate, the workers' certificate and key, the coordinator's certificate and key.
pub struct Tls {
    pub ca: String,
    pub cert: String,
    pub key: String,
    pub client_cert: String,
    pub client_key: String,
}

impl Tls {
    /// A new CA and its certificates (the workers' for 127.0.0.1 and localhost), under `dir`;
    /// the CA's issuer too, for more certificates.
    pub fn new(dir: &Path) -> (Tls, rcgen::Issuer<'static, rcgen::KeyPair>) {
        let (issuer, pem) = ca("rayquet test CA");
        let (cert, key) = leaf(&issuer, true);
        let tls = Tls::of(dir, &issuer, &pem, (&cert, &key));
        (tls, issuer)
    }

    /// The files of CA `issuer` (certificate `pem`) with the workers' certificate and key
    /// `worker`, and a coordinator's certificate it signs, under `dir`.
    pub fn of(
        dir: &Path,
        issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
        pem: &str,
        worker: (&str, &str),
    ) -> Tls {
        let (client_cert, client_key) = leaf(issuer, false);
        Tls {
            ca: write(dir, "ca.pem", pem),
            cert: write(dir, "worker.pem", worker.0),
            key: write(dir, "worker.key", worker.1),
            client_cert: write(dir, "client.pem", &client_cert),
            client_key: write(dir, "client.key", &client_key),
        }
    }

    /// A worker's arguments: its certificate and key, and the CA its clients' must chain to.
    pub fn worker_args(&self) -> [&str; 6] {
        [
            "--tls-cert",
            &self.cert,
            "--tls-key",
            &self.key,
            "--tls-client-ca",
            &self.ca,
        ]
    }

    /// A coordinator's arguments: the CA the workers' certificates chain to, its certificate
    /// and key.
    pub fn client_args(&self) -> [&str; 6] {
        [
            "--tls-ca",
            &self.ca,
            "--tls-cert",
            &self.client_cert,
            "--tls-key",
            &self.client_key,
        ]
    }
}
