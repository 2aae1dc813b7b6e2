#!/usr/bin/env python3
"""Warm scans of rayquet builds side by side, interleaved, in one sitting.

    python3 benches/warm.py DATA_DIR BIN[,BIN...] [WORKLOADS|all] [ROUNDS] [-- extra scan args]

Each round runs every workload with every binary (the order reversed every other round) (`rayquet scan DATA_DIR --repeat 6 --json
--footer-cache 64M [filter/columns] [extra]`; `-- --no-footer-cache` leaves the cache out, for
the first scan against warm ones that read their footers too); reported per binary: the median over rounds of
the warm median wall seconds, warm CPU seconds per scan and first-scan seconds, and (for each
binary after the first) the median over rounds of its paired ratio to the first binary's warm
wall and CPU seconds in the same round, with how many rounds it was faster: on a noisy machine
the paired ratio is steadier than a ratio of medians. DATA_DIR is
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
    for rnd in range(rounds):
        for w in works:
            # The order flips every round (a binary run second may find a warmer machine).
            for b in bins if rnd % 2 == 0 else bins[::-1]:
                cmd = [b, "scan", data, "--repeat", "6", "--json"]
                if "--no-footer-cache" not in extra:
                    cmd += ["--footer-cache", "64M"]
                out = subprocess.run(cmd + WORKLOADS[w] + extra, capture_output=True, text=True,
                                     check=True).stdout
                d = json.loads(out)
                res.setdefault((w, b), []).append(
                    (d["warm_median_seconds"], d["warm_median_cpu_seconds"], d["first_seconds"],
                     d["rows"]))
    print("workload | " + " | ".join(f"{b}: warm s / CPU s / first s" for b in bins)
          + "".join(f" | {b} / {bins[0]}: warm, CPU (faster rounds)" for b in bins[1:]) + " | rows")
    for w in works:
        cells = []
        for b in bins:
            v = res[(w, b)]
            cells.append("%.3f / %.3f / %.3f" % tuple(statistics.median(x[i] for x in v)
                                                     for i in range(3)))
        for b in bins[1:]:
            pairs = list(zip(res[(w, bins[0])], res[(w, b)]))
            r = [(y[0] / x[0], y[1] / x[1]) for x, y in pairs]
            cells.append("%.3f, %.3f (%d, %d of %d)" % (
                statistics.median(v[0] for v in r), statistics.median(v[1] for v in r),
                sum(v[0] < 1 for v in r), sum(v[1] < 1 for v in r), len(r)))
        rows = sorted({x[3] for b in bins for x in res[(w, b)]})
        print(f"{w} | " + " | ".join(cells) + f" | {rows}")


if __name__ == "__main__":
    main()
