#!/usr/bin/env python3
"""Warm scans of rayquet builds against polars, interleaved, in one sitting.

    PEERS_PYTHON=<python with polars> python3 benches/warm_polars.py DATA_DIR BIN[,BIN...] [ROUNDS]

Each round runs the seven local workloads of the peers harness with polars (through
`benches/peers/peers.py _one`: `scan_parquet`, `collect`, 6 scans in one process) and with every
rayquet binary (`rayquet scan DATA_DIR --repeat 6 --footer-cache 64M`), 2 threads each, the
order reversed every other round. Reported: the median over rounds of each reader's warm
median (scans 2-6), and per binary the median of its paired ratio to polars in the same round,
with how many rounds it was faster. DATA_DIR is the peers harness's SF1 lineitem.
"""
import json, os, statistics, subprocess, sys
if len(sys.argv) < 3:
    sys.exit(__doc__)
D = sys.argv[1]
PY = os.environ.get("PEERS_PYTHON", sys.executable)
PEERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "peers.py")
bins = sys.argv[2].split(",")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
W = {
    "full": ({}, []),
    "2col": ({"columns": ["l_orderkey", "l_extendedprice"]}, ["--columns", "l_orderkey,l_extendedprice"]),
    "orderkey": ({"filter": "orderkey"}, ["--filter", "l_orderkey < 1000"]),
    "air-qty": ({"filter": "air-qty"}, ["--filter", "l_shipmode = 'AIR' AND l_quantity < 5"]),
    "shipdate": ({"filter": "shipdate"}, ["--filter", "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'"]),
    "null-or-discount": ({"filter": "null-or-discount"}, ["--filter", "l_comment IS NULL OR l_discount > 0.09"]),
    "flags": ({"filter": "flags"}, ["--filter", "l_returnflag IN ('A','N') AND NOT (l_linestatus = 'O')"]),
}
env = dict(os.environ, POLARS_MAX_THREADS="2", RAYON_NUM_THREADS="2")
res = {}
for r in range(rounds):
    for w, (spec, args) in W.items():
        order = ["polars"] + bins
        if r % 2:
            order = order[::-1]
        for who in order:
            if who == "polars":
                s = dict(reader="polars", threads=2, location={"kind": "local", "path": D},
                         peer_output="collect", repeat=6, pyarrow_io_threads=8, **spec)
                out = subprocess.run([PY, PEERS, "_one", json.dumps(s)], env=env, capture_output=True, text=True, check=True).stdout
                d = json.loads(out.strip().splitlines()[-1])
                warm = statistics.median(d["runs"][1:])
            else:
                out = subprocess.run([who, "scan", D, "--repeat", "6", "--json", "--footer-cache", "64M"] + args,
                                     env=env, capture_output=True, text=True, check=True).stdout
                warm = json.loads(out)["warm_median_seconds"]
            res.setdefault((w, who), []).append(warm)
names = ["polars"] + bins
print("workload | " + " | ".join(os.path.basename(n) for n in names) + " | " + " | ".join(f"{os.path.basename(b)} / polars (faster rounds)" for b in bins))
for w in W:
    cells = ["%.3f" % statistics.median(res[(w, n)]) for n in names]
    for b in bins:
        rs = [x / y for x, y in zip(res[(w, b)], res[(w, "polars")])]
        cells.append("%.2f (%d of %d)" % (statistics.median(rs), sum(x < 1 for x in rs), len(rs)))
    print(f"{w} | " + " | ".join(cells))
