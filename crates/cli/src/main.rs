//! The `rayquet` command line: scan Parquet files, prefixes, Iceberg and Delta tables on every
//! core (`scan`), generate a synthetic dataset (`gen`) and, with the `datafusion` feature, run
//! SQL over them in process or on workers (`sql`, `worker`).
//!
//! ```sh
//! rayquet scan                                  # a demo dataset it makes itself
//! rayquet scan s3://bucket/lineitem/ --columns l_orderkey,l_extendedprice --filter "l_quantity < 5"
//! rayquet scan --iceberg warehouse/db/events --snapshot 42 --json
//! rayquet scan --delta s3://bucket/events/ --version 12 --out rows.arrow
//! rayquet gen /tmp/data --files 16 --row-groups 8 --rows 65536 --compression zstd
//! # with the `datafusion` feature:
//! rayquet sql "SELECT l_returnflag, count(*) FROM t GROUP BY 1" --parquet t=s3://bucket/lineitem/
//! rayquet worker --listen 0.0.0.0:50051 --token-file /etc/rayquet/token --allow s3://bucket/lineitem/
//! rayquet sql "SELECT count(*) FROM t" --iceberg t=warehouse/db/events --workers http://a:50051,http://b:50051 \
//!     --token-file /etc/rayquet/token
//! ```
//!
//! Errors are printed as `error: <message>` on stderr with exit code 1.

mod format;
mod gen;
mod out;
mod scan;
#[cfg(feature = "datafusion")]
mod sql;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type CliResult<T> = Result<T, BoxError>;

/// Read Parquet from object storage into Arrow, fast: tokio fetches, rayon decodes.
#[derive(Debug, Parser)]
#[command(name = "rayquet", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write a deterministic synthetic TPC-H lineitem-like dataset (20 columns).
    Gen(gen::GenArgs),
    /// Scan Parquet files (or an Iceberg or Delta table) and report rows, bytes and throughput.
    ///
    /// Without a path, scans a demo dataset (created once under the system temp directory).
    Scan(Box<scan::ScanArgs>),
    /// Run a SQL query (DataFusion) over Parquet datasets, Iceberg and Delta tables read by
    /// rayquet: on every core of this machine, or on rayquet workers (--workers).
    #[cfg(feature = "datafusion")]
    Sql(Box<sql::SqlArgs>),
    /// Serve as a rayquet worker for `rayquet sql --workers`, until stopped.
    #[cfg(feature = "datafusion")]
    Worker(sql::WorkerArgs),
}

// Decode threads allocate batches that the consumer frees; glibc's malloc hands such memory
// back to the kernel and faults it in again (page clearing showed up as ~30% of CPU in perf).
// Both engines of this binary use the same allocator, so comparisons stay fair.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The CPU features this binary was compiled to assume (only when built with a `target-cpu`
/// in `RUSTFLAGS`: the repository's builds are generic) that this CPU lacks: running on would
/// crash with an illegal instruction.
fn missing_cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut missing = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! need {
            ($($f:tt),*) => {$(
                if cfg!(target_feature = $f) && !std::arch::is_x86_feature_detected!($f) {
                    missing.push($f);
                }
            )*};
        }
        need!("avx", "avx2", "bmi1", "bmi2", "fma", "lzcnt", "movbe", "popcnt", "sse4.2");
    }
    missing
}

fn main() -> ExitCode {
    let missing = missing_cpu_features();
    if !missing.is_empty() {
        eprintln!(
            "error: this rayquet was built for a CPU with {} (a target-cpu in RUSTFLAGS); \
             this CPU lacks them. Rebuild without it (RUSTFLAGS=\"\") for any x86-64 CPU.",
            missing.join(", ")
        );
        return ExitCode::from(2);
    }
    // Transparent huge pages make this workload's fresh memory cost bimodal: most runs are
    // fast, some spend up to a second in the kernel zeroing and compacting 2 MiB pages, and
    // RSS counts whole huge pages. Off for this process unless RAYQUET_THP=1.
    #[cfg(target_os = "linux")]
    if std::env::var_os("RAYQUET_THP").is_none_or(|v| v == "0") {
        // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(args) => gen::run(args),
        Command::Scan(args) => scan::run(*args),
        #[cfg(feature = "datafusion")]
        Command::Sql(args) => sql::run(*args),
        #[cfg(feature = "datafusion")]
        Command::Worker(args) => sql::worker(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
