//! A Python interpreter with pinned packages, for tests whose data and expectations come from
//! Python writers (pyiceberg, deltalake, pyarrow, duckdb, polars), and a cache for what such
//! writers generate.
//!
//! [`venv`] makes (once per requirements file and interpreter version) a virtualenv under the
//! cargo target directory, `<target>/rayquet-venvs/<hash>/`, with `python3 -m venv` and
//! `pip install -r`; concurrent test binaries wait for each other on a file lock.
//! `RAYQUET_PYTHON=/path/to/python` uses an interpreter of your own instead (it must have the
//! requirements installed). A failure to make the venv panics with what to do: a test that
//! needs Python never passes or skips without it.
//!
//! [`generated`] runs a generator once into `<target>/rayquet-generated/<name>-<hash>/`, keyed
//! by a hash of its inputs (the generator script, its requirements), and reuses the output
//! while they are unchanged.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable naming an interpreter to use instead of a venv.
pub const PYTHON_ENV: &str = "RAYQUET_PYTHON";

/// The cargo target directory of the running test binary: `$CARGO_TARGET_DIR` when set, else
/// the directory above the binary's profile folder (`<target>/release/deps/<test>`).
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        if dir.is_absolute() {
            return dir;
        }
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    // <target>/<profile>/deps/<binary>
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// FNV-1a (64 bits) of `parts`: a stable key for cache folders (std's hashers may change
/// between Rust releases).
pub fn stable_hash<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(&[0xff]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Run `cmd`; `Err` with its command line, status and output tail when it fails.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{cmd:?}: cannot run: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        Err(format!("{cmd:?} failed ({}):\n{tail}", out.status))
    }
}

/// Hold an exclusive lock on `path` (created if missing) until the returned file is dropped.
fn lock(path: &Path) -> File {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
    file
}

/// The Python interpreter to run with the packages of `requirements` (a pip requirements
/// file) installed: `$RAYQUET_PYTHON` if set, else the `bin/python` of a venv made for those
/// requirements under the target directory (made now if missing; idempotent, safe across
/// concurrent test binaries). Panics, saying how to fix it, when the venv cannot be made.
pub fn venv(requirements: &Path) -> PathBuf {
    if let Some(python) = std::env::var_os(PYTHON_ENV) {
        let python = PathBuf::from(python);
        if let Err(e) = run(Command::new(&python).args(["-c", "import sys"])) {
            panic!(
                "{PYTHON_ENV}={}: not a working interpreter: {e}",
                python.display()
            );
        }
        return python;
    }
    let reqs = fs::read(requirements)
        .unwrap_or_else(|e| panic!("requirements {}: {e}", requirements.display()));
    let base = "python3";
    let version = run(Command::new(base).args(["-c", "import sys; print(sys.version)"]))
        .unwrap_or_else(|e| {
            panic!(
                "this test needs Python 3 (with the venv module) to install {}: {e}\n\
                 Install python3 and python3-venv (apt-get install python3 python3-venv), or set \
                 {PYTHON_ENV} to an interpreter with `pip install -r {}` done.",
                requirements.display(),
                requirements.display()
            )
        });
    let key = stable_hash([reqs.as_slice(), version.as_bytes()]);
    let dir = target_dir()
        .join("rayquet-venvs")
        .join(format!("{key:016x}"));
    let python = dir.join("bin").join("python");
    let ready = dir.join("rayquet-ready");
    if ready.is_file() {
        touch(&ready);
        return python;
    }
    let _guard = lock(&dir.with_extension("lock"));
    if ready.is_file() {
        return python; // another process made it while we waited
    }
    prune_venvs(dir.parent().expect("the venvs folder"), &dir);
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    let started = std::time::Instant::now();
    eprintln!(
        "making a Python venv for {} in {} (once)",
        requirements.display(),
        dir.display()
    );
    let made = run(Command::new(base).arg("-m").arg("venv").arg(&dir)).and_then(|_| {
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
            ])
            .args(["--quiet", "-r"])
            .arg(requirements))
    });
    if let Err(e) = made {
        let _ = fs::remove_dir_all(&dir);
        panic!(
            "could not make the Python venv this test needs: {e}\n\
             To fix: make sure `python3 -m venv` works (apt-get install python3-venv) and that \
             PyPI is reachable, or install the packages yourself and point {PYTHON_ENV} at \
             that interpreter:\n    python3 -m venv /some/venv && /some/venv/bin/pip install \
             -r {}\n    export {PYTHON_ENV}=/some/venv/bin/python",
            requirements.display()
        );
    }
    let mut f = File::create(&ready).unwrap_or_else(|e| panic!("{}: {e}", ready.display()));
    f.write_all(&reqs).expect("write the venv's marker");
    eprintln!("venv ready in {:.1?}", started.elapsed());
    python
}

/// Mark a venv as used now (its marker's modification time).
fn touch(marker: &Path) {
    if let Ok(f) = File::options().append(true).open(marker) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Remove the finished venvs (about 700 MB each) of other requirements that no test used for
/// two weeks, but `keep`.
fn prune_venvs(root: &Path, keep: &Path) {
    const UNUSED: std::time::Duration = std::time::Duration::from_secs(14 * 24 * 3600);
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p == keep || !p.is_dir() {
            continue;
        }
        // Only finished venvs (one being made has no marker yet).
        let used = fs::metadata(p.join("rayquet-ready")).and_then(|m| m.modified());
        let stale = used.is_ok_and(|t| t.elapsed().unwrap_or_default() > UNUSED);
        if stale {
            let _ = fs::remove_dir_all(&p);
            let _ = fs::remove_file(p.with_extension("lock"));
        }
    }
}

/// The output folder of a generator, made once per content of `inputs`:
/// `<target>/rayquet-generated/<name>-<hash of inputs>/`. When it is missing (or incomplete),
/// `make(dir)` fills it (an empty `dir`, created); once `make` returns `Ok`, the folder is
/// reused by every later call with the same inputs. Concurrent callers (threads or
/// processes) wait for each other. Panics with `make`'s error. Older outputs of `name` are
/// removed.
pub fn generated(
    name: &str,
    inputs: &[&Path],
    make: impl FnOnce(&Path) -> Result<(), String>,
) -> PathBuf {
    let contents: Vec<Vec<u8>> = inputs
        .iter()
        .map(|p| fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    let key = stable_hash(contents.iter().map(Vec::as_slice));
    let root = target_dir().join("rayquet-generated");
    let dir = root.join(format!("{name}-{key:016x}"));
    let done = dir.join(".rayquet-done");
    if done.is_file() {
        return dir;
    }
    let _guard = lock(&root.join(format!("{name}.lock")));
    if done.is_file() {
        return dir;
    }
    // Outputs of older inputs, and a partial one of these.
    if let Ok(entries) = fs::read_dir(&root) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&format!("{name}-")) && e.path().is_dir() {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    if let Err(e) = make(&dir) {
        panic!("generating {name} into {}: {e}", dir.display());
    }
    File::create(&done).unwrap_or_else(|e| panic!("{}: {e}", done.display()));
    dir
}

/// Run `python script args...`; `Err` with the output's tail when it fails.
pub fn run_script(
    python: &Path,
    script: &Path,
    args: &[&std::ffi::OsStr],
) -> Result<String, String> {
    run(Command::new(python).arg(script).args(args))
}
