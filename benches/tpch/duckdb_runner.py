"""DuckDB as the outside reference of the TPC-H benchmark (crates/datafusion/benches/tpch.rs).

The benchmark starts this once and sends one line per run: `query qN` (the file
QUERIES/qN.sql), `file PATH` (a query file of the user's) or `sql TEXT`. Each is timed here, around DuckDB's execution and fetching
the result as Arrow, and answered with one JSON line: {"seconds": s, "rows": n}, or
{"error": message}. The tables are views over the same Parquet files the other engines read
(DIR/<table>.parquet or DIR/<table>/*.parquet), with DuckDB's `threads` set to --threads.
"""

import argparse
import json
import os
import sys
import time

TABLES = ["lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region"]


def statements(text):
    """The statements of a query file: comments dropped, split at `;` (TPC-H's text has no
    `;` or `--` inside a string)."""
    lines = [line.split("--", 1)[0] for line in text.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--threads", type=int, required=True)
    args = ap.parse_args()
    try:
        import duckdb
        import pyarrow  # noqa: F401 - DuckDB's results are fetched as Arrow
    except ImportError as e:
        sys.exit(
            f"the TPC-H benchmark's DuckDB runner needs duckdb and pyarrow in {sys.executable}"
            f" (benches/peers/requirements.txt pins both): {e}"
        )

    con = duckdb.connect(config={"threads": args.threads})
    for t in TABLES:
        f = os.path.join(args.data, f"{t}.parquet")
        src = f if os.path.exists(f) else os.path.join(args.data, t, "*.parquet")
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{src}')")
    for line in sys.stdin:
        kind, _, rest = line.rstrip("\n").partition(" ")
        try:
            if kind in ("query", "file"):
                path = os.path.join(args.queries, f"{rest}.sql") if kind == "query" else rest
                with open(path) as f:
                    text = f.read()
            else:
                text = rest
            start = time.perf_counter()
            rows = None
            for s in statements(text):
                cur = con.execute(s)
                # The result: the last query's rows (DuckDB describes DDL results too).
                if s.split(None, 1)[0].lower() in ("select", "with"):
                    fetch = getattr(cur, "to_arrow_table", None) or cur.fetch_arrow_table
                    rows = fetch().num_rows
            seconds = time.perf_counter() - start
            out = {"seconds": seconds, "rows": rows or 0}
        except Exception as e:  # noqa: BLE001 - reported to the benchmark, which fails
            out = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
