#!/usr/bin/env python3
"""Warm scans of rayquet builds side by side, interleaved, in one sitting.

    python3 benches/warm.py DATA_DIR BIN[,BIN...] [WORKLOADS|all] [ROUNDS] [-- extra scan args]

Each round runs every workload with every binary (`rayquet scan DATA_DIR --repeat 6 --json
--footer-cache 64M [filter/columns] [extra]`); reported per binary: the median over rounds of
the warm median wall seconds, warm CPU seconds per scan and first-scan seconds. DATA_DIR is
TPC-H lineitem (e.g. the peers harness's sf1/lineitem). A BIN may be a wrapper script that
adds flags (e.g. `--mmap`). Environment (RAYON_NUM_THREADS, RAYQUET_THP) passes through.
"""
import json
import statistics
import subprocess
import sys

WORKLOADS = {
    "full": [],
    "2col": ["--columns", "l_orderkey,l_extendedprice"],
    "orderkey": ["--filter", "l_orderkey < 1000"],
    "air-qty": ["--filter", "l_shipmode = 'AIR' AND l_quantity < 5"],
    "shipdate": ["--filter", "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'"],
    "null-or-discount": ["--filter", "l_comment IS NULL OR l_discount > 0.09"],
    "flags": ["--filter", "l_returnflag IN ('A','N') AND NOT (l_linestatus = 'O')"],
}


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    if len(args) < 2:
        sys.exit(__doc__)
    data, bins = args[0], args[1].split(",")
    works = list(WORKLOADS) if len(args) < 3 or args[2] == "all" else args[2].split(",")
    rounds = int(args[3]) if len(args) > 3 else 3
    res = {}
    for _ in range(rounds):
        for w in works:
            for b in bins:
                cmd = [b, "scan", data, "--repeat", "6", "--json", "--footer-cache", "64M"]
                out = subprocess.run(cmd + WORKLOADS[w] + extra, capture_output=True, text=True,
                                     check=True).stdout
                d = json.loads(out)
                res.setdefault((w, b), []).append(
                    (d["warm_median_seconds"], d["warm_median_cpu_seconds"], d["first_seconds"],
                     d["rows"]))
    print("workload | " + " | ".join(f"{b}: warm s / CPU s / first s" for b in bins) + " | rows")
    for w in works:
        cells = []
        for b in bins:
            v = res[(w, b)]
            cells.append("%.3f / %.3f / %.3f" % tuple(statistics.median(x[i] for x in v)
                                                     for i in range(3)))
        rows = sorted({x[3] for b in bins for x in res[(w, b)]})
        print(f"{w} | " + " | ".join(cells) + f" | {rows}")


if __name__ == "__main__":
    main()
