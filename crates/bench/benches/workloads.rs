//! The workload benchmark: rayquet against parquet's sync and async readers and the table
//! formats' own readers, locally and under simulated object-store latency, each reader in its
//! own child process. The harness is this crate (`rayquet_bench`); see BENCHMARKS.md.
//!
//! ```sh
//! cargo bench -p rayquet-bench --bench workloads -- --workloads W1,W2,W7 --readers rayquet --runs 3
//! cargo bench -p rayquet-bench --bench workloads -- --help
//! ```

// The allocator of the `rayquet` binary, so every reader runs as it would there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    rayquet_bench::main()
}
