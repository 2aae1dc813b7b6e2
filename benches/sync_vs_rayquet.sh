#!/usr/bin/env bash
# rayquet vs parquet's single-threaded sync reader over the same local files, same projection
# (all columns) and batch size (8192), alternating runs; prints each run and the medians.
#   bash benches/sync_vs_rayquet.sh DIR [RUNS] [BINARY]
# Make a dataset first, e.g.:
#   cargo run --release -- gen /tmp/big --files 16 --row-groups 4 --rows 131072 --compression snappy
set -euo pipefail
dir=${1:?usage: sync_vs_rayquet.sh DIR [RUNS] [BINARY]}
runs=${2:-5}
bin=${3:-${CARGO_TARGET_DIR:-target}/release/rayquet}
for i in $(seq "$runs"); do
    for mode in "rayquet ordered:" "rayquet unordered:--unordered" "sync:--engine sync"; do
        name=${mode%%:*}
        args=${mode#*:}
        # shellcheck disable=SC2086
        "$bin" scan "$dir" --json $args | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%s\t%.3f\t%.0f\t%d\t%d" % (sys.argv[1], d["seconds"], d["rows_per_sec"],
      d["bytes_decoded"], d.get("peak_buffered_bytes", 0)))
' "$name"
    done
done | python3 -c '
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in sys.stdin]
for r in rows:
    print("run", *r)
by = {}
for name, secs, rps, dec, peak in rows:
    by.setdefault(name, []).append((float(secs), float(rps), int(dec), int(peak)))
base = statistics.median(s for s, *_ in by["sync"])
for name, v in by.items():
    med = statistics.median(s for s, *_ in v)
    print(f"median {name:20s} {med:.3f} s  {statistics.median(r for _, r, *_ in v)/1e6:.2f} Mrows/s  "
          f"decoded {v[0][2]/2**30:.2f} GiB  peak buffered {max(p for *_, p in v)/2**20:.0f} MiB  "
          f"x{base/med:.2f} vs sync")
'
