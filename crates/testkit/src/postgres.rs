//! A PostgreSQL server for a test: a cluster of its own in a temporary directory, listening
//! on a free loopback port with password (SCRAM) logins, stopped and removed when the
//! [`Postgres`] drops.
//!
//! The server is Debian's `postgresql` when the machine has it (`/usr/lib/postgresql/*/bin`),
//! else the build PyPI's `pgserver` wheel carries, installed into a venv of its own
//! (`crates/testkit/postgres-requirements.txt`, made once as the other test venvs are), so the
//! tests need nothing but Python on a fresh machine. `RAYQUET_POSTGRES_BIN` names another
//! `bin` directory, or `wheel` to use pgserver's build even where Debian's is installed.
//!
//! Postgres refuses to run as root: as root, the cluster belongs to the `postgres` user
//! Debian's package makes (else `nobody`, with the wheel's binaries copied into the cluster's
//! directory, where that user can run them), and its commands run through `runuser`.
//!
//! ```no_run
//! let pg = rayquet_testkit::postgres::Postgres::start();
//! let url = pg.url(); // postgresql://rayquet:<password>@127.0.0.1:<port>/postgres
//! ```

use std::path::PathBuf;
use std::process::Command;

/// The user and password of the cluster's superuser.
pub const USER: &str = "rayquet";
/// The superuser's password.
pub const PASSWORD: &str = "rayquet-pw";

/// A PostgreSQL `bin` directory to use instead of Debian's, or `wheel` for pgserver's build.
pub const BIN_ENV: &str = "RAYQUET_POSTGRES_BIN";

/// A running cluster (stopped on drop).
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    /// The user the server runs as, when the tests run as root.
    owner: Option<&'static str>,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

/// Debian's newest `/usr/lib/postgresql/<version>/bin`, if the machine has one.
fn debian_bin() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// The `bin` of the PostgreSQL build in PyPI's `pgserver` wheel (its venv made if needed).
fn wheel_bin() -> PathBuf {
    let reqs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("postgres-requirements.txt");
    let python = crate::python::venv(&reqs);
    let out = Command::new(&python)
        .args([
            "-c",
            "import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / 'pginstall' / 'bin')",
        ])
        .output()
        .expect("the pgserver venv's python");
    assert!(
        out.status.success(),
        "pgserver: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Copy the directory `from` into `to`, recursively (symbolic links as links).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&src, &dst);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

impl Postgres {
    /// Make a cluster and start it; panics, saying what is missing, when it cannot.
    pub fn start() -> Postgres {
        let root = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let chosen = match std::env::var_os(BIN_ENV) {
            Some(v) if v == "wheel" => None,
            Some(v) => Some(PathBuf::from(v)),
            None => debian_bin(),
        };
        let (bin, owner) = match chosen {
            Some(bin) => (bin, root.then_some("postgres")),
            None => {
                // The wheel's build (bin, lib, share) and the libraries auditwheel moved
                // beside the package (`$ORIGIN/../../../pgserver.libs`), about 34 MB, copied
                // where its user can run them.
                let bin = wheel_bin();
                let site = bin.ancestors().nth(3).expect("site-packages").to_path_buf();
                let copy = dir.path().join("pg");
                copy_tree(
                    &site.join("pgserver/pginstall"),
                    &copy.join("pgserver/pginstall"),
                );
                if site.join("pgserver.libs").is_dir() {
                    copy_tree(&site.join("pgserver.libs"), &copy.join("pgserver.libs"));
                }
                (
                    copy.join("pgserver/pginstall/bin"),
                    root.then_some("nobody"),
                )
            }
        };
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if let Some(user) = owner {
            let ok = Command::new("chown")
                .arg("-R")
                .arg(format!("{user}:"))
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the cluster's directory to {user}");
        }
        let port = free_port();
        let pg = Postgres {
            bin,
            data,
            _dir: dir,
            owner,
            port,
        };
        pg.run(
            "initdb",
            &[
                "-D".as_ref(),
                pg.data.as_os_str(),
                "-U".as_ref(),
                USER.as_ref(),
                "--auth=scram-sha-256".as_ref(),
                "--pwfile".as_ref(),
                pwfile.as_os_str(),
                "-E".as_ref(),
                "UTF8".as_ref(),
            ],
        );
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {}",
            pg.data.display()
        );
        pg.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                pg.data.as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-w".as_ref(),
                "-l".as_ref(),
                pg.data.join("log").as_os_str(),
                "start".as_ref(),
            ],
        );
        pg
    }

    /// The superuser's URL (database `postgres`).
    pub fn url(&self) -> String {
        format!(
            "postgresql://{USER}:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// `tool` of the server's binaries, as the cluster's owner.
    fn command(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        let mut cmd = match self.owner {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.current_dir("/");
        cmd
    }

    fn run(&self, tool: &str, args: &[&std::ffi::OsStr]) {
        let out = self
            .command(tool)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

/// A port no one listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
