//! `rayquet gen`, and the demo dataset `rayquet scan` reads when given no path.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use rayquet_gen::{self as gen, Compression, GenOptions};

use crate::format::{count, human_bytes, parse_positive, spinner, write_out};
use crate::CliResult;

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Directory to write part-00000.parquet, part-00001.parquet, ... into (created if missing).
    dir: PathBuf,
    /// Number of files.
    #[arg(long, default_value_t = GenOptions::default().files)]
    files: usize,
    /// Row groups per file.
    #[arg(long, default_value_t = GenOptions::default().row_groups)]
    row_groups: usize,
    /// Rows per row group.
    #[arg(long, default_value_t = GenOptions::default().rows_per_row_group,
          value_parser = parse_positive)]
    rows: usize,
    /// Page compression: none, snappy, zstd, lz4 or gzip.
    #[arg(long, default_value_t = Compression::Snappy)]
    compression: Compression,
    /// Seed of the generated values (same arguments, same bytes).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// `rayquet gen`.
pub fn run(args: GenArgs) -> CliResult<()> {
    let opts = GenOptions {
        files: args.files,
        row_groups: args.row_groups,
        rows_per_row_group: args.rows,
        compression: args.compression,
        seed: args.seed,
    };
    let (paths, bytes, elapsed) = generate_with_spinner(&args.dir, &opts)?;
    let mut out = std::io::stdout().lock();
    write_out(
        &mut out,
        format_args!(
            "wrote {} files to {}: {} row groups, {} rows, {} on disk ({}) in {:.2} s\n",
            paths.len(),
            args.dir.display(),
            count(opts.files as u64 * opts.row_groups as u64),
            count(opts.total_rows()),
            human_bytes(bytes),
            opts.compression,
            elapsed.as_secs_f64(),
        ),
    )
}

/// Run [`gen::generate`] behind a spinner; return the paths, their total size and the time.
fn generate_with_spinner(
    dir: &Path,
    opts: &GenOptions,
) -> CliResult<(Vec<PathBuf>, u64, Duration)> {
    let spinner = spinner();
    spinner.set_message(format!(
        "generating {} rows in {} files ({})",
        count(opts.total_rows()),
        opts.files,
        opts.compression
    ));
    let start = Instant::now();
    let result = gen::generate(dir, opts);
    spinner.finish_and_clear();
    let paths = result.map_err(|e| format!("writing {}: {e}", dir.display()))?;
    let mut bytes = 0;
    for p in &paths {
        bytes += std::fs::metadata(p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .len();
    }
    Ok((paths, bytes, start.elapsed()))
}

/// The demo dataset `scan` reads when given no path.
fn demo_options() -> GenOptions {
    GenOptions {
        files: 8,
        row_groups: 4,
        rows_per_row_group: 65_536,
        compression: Compression::Snappy,
        seed: 0,
    }
}

fn demo_complete(dir: &Path, opts: &GenOptions) -> bool {
    (0..opts.files).all(|i| dir.join(gen::file_name(i)).is_file())
}

/// Make sure the demo dataset exists under the temp directory and return its path.
///
/// It is generated into a private directory and renamed into place, so an interrupted run never
/// leaves a partial dataset behind under the final name.
pub fn ensure_demo() -> CliResult<PathBuf> {
    let opts = demo_options();
    let dir = std::env::temp_dir().join("rayquet-demo");
    let summary = format!(
        "{} files x {} row groups x {} rows, {}",
        opts.files,
        opts.row_groups,
        count(opts.rows_per_row_group as u64),
        opts.compression
    );
    if demo_complete(&dir, &opts) {
        eprintln!(
            "no path given: scanning the demo dataset in {} ({summary})",
            dir.display()
        );
        return Ok(dir);
    }
    eprintln!(
        "no path given: creating a demo dataset in {} ({summary}) ...",
        dir.display()
    );
    let tmp = std::env::temp_dir().join(format!("rayquet-demo.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let (_, bytes, elapsed) = generate_with_spinner(&tmp, &opts)?;
    if dir.exists() && !demo_complete(&dir, &opts) {
        // A stale or damaged demo directory (ours, by its name): replace it.
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another run may have finished first; its dataset is as good as ours.
        if !demo_complete(&dir, &opts) {
            return Err(format!("moving the demo dataset to {}: {e}", dir.display()).into());
        }
    }
    eprintln!(
        "created {} in {:.1} s; scanning it (pass a path or URL to scan your own data)",
        human_bytes(bytes),
        elapsed.as_secs_f64()
    );
    Ok(dir)
}
