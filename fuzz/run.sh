#!/usr/bin/env bash
# Runs rayquet's cargo-fuzz targets under AddressSanitizer (cargo-fuzz's default, with debug
# assertions and overflow checks), one at a time, each for SECONDS, niced, one libFuzzer process
# (-jobs=1: the machine's cores are shared), and prints per target: executions, coverage (cov:
# edges, ft: features), corpus size and findings.
#
#   fuzz/run.sh TARGET|all SECONDS          e.g. fuzz/run.sh all 600, fuzz/run.sh direct 60
#
# Needs a nightly toolchain and `cargo install cargo-fuzz`. Seeds: fuzz/corpus/TARGET (committed);
# new inputs go to fuzz/work/TARGET (ignored by git); findings to fuzz/artifacts/TARGET. With
# MERGE=1, the inputs of fuzz/work/TARGET that add coverage are merged into fuzz/corpus/TARGET
# afterwards. A finding, once fixed, goes to fuzz/regressions/TARGET/ (replayed by
# `cargo test`, crates/fuzz-replay). Logs: fuzz/work/TARGET.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

all=(snappy rle validate direct scan task iceberg_dv iceberg_manifest delta_log delta_dv)
if [[ $# -ne 2 || ! $2 =~ ^[0-9]+$ ]]; then
    echo "usage: fuzz/run.sh TARGET|all SECONDS   (targets: ${all[*]})" >&2
    exit 2
fi
if [[ $1 == all ]]; then targets=("${all[@]}"); else targets=("$1"); fi
seconds=$2
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

# Build first (not counted in the run's time).
if ((${#targets[@]} == 1)); then
    nice -n 10 cargo +nightly fuzz build "${targets[0]}"
else
    nice -n 10 cargo +nightly fuzz build
fi

summary=()
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "corpus/$t" "artifacts/$t"
    before=$(find "artifacts/$t" -type f | wc -l)
    log="work/$t.log"
    started=$(date -u +%FT%TZ)
    echo "==> $t: ${seconds}s from $started (log $log)"
    # -malloc_limit_mb: an allocation from a claimed size is a crash; -timeout: a hang is one.
    set +e
    nice -n 10 cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$seconds" -jobs=1 -workers=1 -timeout=20 -malloc_limit_mb=512 \
        -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1
    rc=$?
    set -e
    # With -jobs, the job writes to fuzz-0.log in the working directory, which libFuzzer
    # copies to its own output when the job ends.
    rm -f fuzz-*.log
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(grep -o 'cov: [0-9]*' <<<"$last" | awk '{print $2}')
    ft=$(grep -o 'ft: [0-9]*' <<<"$last" | awk '{print $2}')
    corp=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' <<<"$last" | awk '{print $2}')
    after=$(find "artifacts/$t" -type f | wc -l)
    findings=$((after - before))
    line="$t: ${seconds}s from $started, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, findings $findings (exit $rc)"
    echo "$line"
    if ((findings > 0)); then
        find "artifacts/$t" -type f -newer "$log" -o -type f -cnewer "work/$t" 2>/dev/null | head -5
        grep -m3 -E 'panicked at|ERROR: AddressSanitizer|SUMMARY' "$log" || true
    fi
    summary+=("$line")
    if [[ ${MERGE:-0} == 1 ]]; then
        nice -n 10 cargo +nightly fuzz run "$t" "corpus/$t" "work/$t" -- -merge=1 \
            -timeout=20 -malloc_limit_mb=512 -rss_limit_mb=3072 >>"$log" 2>&1 || true
        echo "    merged: corpus/$t has $(find "corpus/$t" -type f | wc -l) files, $(du -sh "corpus/$t" | cut -f1)"
    fi
done
echo
echo "command: fuzz/run.sh $* ($(cargo +nightly --version), cargo-fuzz $(cargo fuzz --version 2>/dev/null | awk '{print $2}'))"
printf '%s\n' "${summary[@]}"
