//! A PostgreSQL server for a test: Debian's `postgresql` binaries (`initdb`, `pg_ctl`), a
//! cluster of its own in a temporary directory, listening on a free loopback port with
//! password (SCRAM) logins, stopped and removed when the [`Postgres`] drops.
//!
//! Postgres refuses to run as root: as root, the cluster belongs to the `postgres` user the
//! Debian package creates, and its commands run through `runuser`.
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

/// A running cluster (stopped on drop).
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    as_postgres: bool,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

/// The directory of `initdb` and `pg_ctl`: on the PATH, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "these tests need a PostgreSQL server's binaries (initdb, pg_ctl) under \
             /usr/lib/postgresql: apt-get install postgresql (.ci/run installs it)"
        )
    })
}

impl Postgres {
    /// Make a cluster and start it; panics, saying what is missing, when it cannot.
    pub fn start() -> Postgres {
        let bin = bin_dir();
        let as_postgres = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "chown to the `postgres` user (made by Debian's postgresql package)"
            );
        }
        let port = free_port();
        let pg = Postgres {
            bin,
            data,
            _dir: dir,
            as_postgres,
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
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
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
