#!/usr/bin/env bash
# rayquet vs polars, pyarrow and duckdb on TPC-H lineitem, locally and over the S3 API on
# loopback (s3-serve from crates/bench, every first byte held 0, 30 and 100 ms). One command:
#
#   bash benches/peers/run.sh            # SF1, 5 runs per reader and workload
#   bash benches/peers/run.sh --quick    # plumbing check: SF0.1, 1 run
#   bash benches/peers/run.sh --repeat 6 # warm: 6 scans per process, first run and median of 2-6
#   bash benches/peers/run.sh --help     # every option (scale factor, runs, readers, workloads...)
#
# Makes its venv with the pinned versions of requirements.txt (default
# ~/.cache/rayquet/peers-venv, or $RAYQUET_PEERS_VENV), builds rayquet (release) unless
# $RAYQUET_BIN names a binary, and s3-serve unless $RAYQUET_S3_SERVE_BIN does, and runs peers.py. Results go to benches/results/peers/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${RAYQUET_PEERS_CACHE:-$HOME/.cache/rayquet}
venv=${RAYQUET_PEERS_VENV:-$cache/peers-venv}
python=${PYTHON:-python3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/rayquet/target}

for arg in "$@"; do
    if [[ $arg == -h || $arg == --help ]]; then
        exec "$python" "$here/peers.py" --help
    fi
done

step() { printf '==> %s\n' "$*" >&2; }

# 1. The venv, (re)installed when requirements.txt changes.
req="$here/requirements.txt"
stamp="$venv/.peers-requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ ! -x $venv/bin/python || "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
    step "venv $venv (pinned: $(grep -v '^#' "$req" | tr '\n' ' '))"
    "$python" -m venv "$venv" || { echo "error: $python -m venv failed (install python3-venv)" >&2; exit 2; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --upgrade pip >/dev/null ||
        true
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"; then
        echo "error: pip install -r $req failed (is PyPI reachable?)" >&2
        exit 2
    fi
    echo "$want" >"$stamp"
fi

# 2. rayquet, built from this checkout and copied aside: the target dir may be shared with other
# checkouts, whose builds must not swap the binary mid-run.
commit=$(git -C "$repo" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
if [[ -n ${RAYQUET_BIN:-} ]]; then
    bin=$RAYQUET_BIN
    commit="$commit (RAYQUET_BIN=$bin)"
else
    step "cargo build --release (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
    (cd "$repo" && cargo build --release -p rayquet-cli --bin rayquet)
    mkdir -p "$cache/peers-bin"
    bin="$cache/peers-bin/rayquet-$commit"
    cp "$CARGO_TARGET_DIR/release/rayquet" "$bin.tmp.$$"
    mv -f "$bin.tmp.$$" "$bin"
fi
if [[ -z ${RAYQUET_S3_SERVE_BIN:-} ]]; then
    step "cargo build --release -p rayquet-bench --bin s3-serve"
    (cd "$repo" && cargo build --release -p rayquet-bench --bin s3-serve)
    mkdir -p "$cache/peers-bin"
    RAYQUET_S3_SERVE_BIN="$cache/peers-bin/s3-serve-$commit"
    cp "$CARGO_TARGET_DIR/release/s3-serve" "$RAYQUET_S3_SERVE_BIN.tmp.$$"
    mv -f "$RAYQUET_S3_SERVE_BIN.tmp.$$" "$RAYQUET_S3_SERVE_BIN"
fi
export RAYQUET_S3_SERVE_BIN

# 3. The benchmark. Servers it starts (moto, proxy) are stopped by it; should it be killed,
# this trap stops what its pid file still lists.
pid_file=$(mktemp "${TMPDIR:-/tmp}/rayquet-peers.XXXXXX")
cleanup() {
    local pid
    while read -r pid; do
        [[ -n $pid ]] && kill -TERM -- "-$pid" 2>/dev/null || true
    done <"$pid_file"
    rm -f "$pid_file"
}
trap cleanup EXIT
# peers.py runs in the background so that INT/TERM reach this shell at once; they are passed on
# as TERM (peers.py then stops its servers and exits), and the EXIT trap cleans up after it.
"$venv/bin/python" "$here/peers.py" --rayquet-bin "$bin" --rayquet-commit "$commit" --pid-file "$pid_file" "$@" &
child=$!
stop_child() {
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
    exit "$1"
}
trap 'stop_child 130' INT
trap 'stop_child 143' TERM
set +e
wait "$child"
rc=$?
set -e
exit "$rc"
