#!/usr/bin/env python3
"""rayquet's Python package against pyarrow.dataset, polars and duckdb on TPC-H lineitem.

    python benches/python_bench.py [--data DIR] [--sf 1] [--runs 6] [--readers ...] [--workloads ...]

Every reader reads into memory (rayquet `scan(...).read_all()`, pyarrow `dataset.to_table()`,
polars `scan_parquet(...).collect()`, rayquet-lazy the same polars query over
`rayquet.polars.scan_parquet(...)`, duckdb `read_parquet` -> an Arrow table), each
(reader, workload) in a fresh Python process that runs the read `--runs` times, building the
scan anew each time: **first** is run 1 (a fresh process: imports done, nothing else warm but
the page cache), **warm** the median of runs 2..N; both are medians over `--processes`
processes per reader and workload (readers interleaved). Timers cover discovery (listing, footers),
the read and the result. Every run's row count must match duckdb's `count(*)` for the workload.
Prints a markdown table.

Two more kinds of workload:
- `first-batch`: the time from the call to the first batch of a full lineitem scan (a reader
  that streams hands over its first batch long before the last): rayquet (`next(iter(reader))`),
  pyarrow (`dataset.scanner().to_reader()`), duckdb (`fetch_record_batch()`); polars has no streaming
  read into Arrow batches and is left out.
- `iceberg-mor`, `delta-dv`: a whole table read into memory: an Iceberg v2 merge-on-read table
  (8 files x 500k rows, ~10% position-deleted) by rayquet against pyiceberg's `to_arrow()`, and
  a Delta table with deletion vectors (8 files x 500k rows, ~10% deleted) by rayquet against
  deltalake (its DataFusion `QueryBuilder`: `to_pyarrow_table()` refuses deletion vectors).
  The tables are written once by `cargo run --release -p rayquet-bench --bin python-tables --
  DIR` (iceberg-rust and delta-kernel writers) under `--tables DIR`
  (default ~/.cache/rayquet/python-bench-tables); every reader must deliver the rows left
  after deletes, counted when they were written.

`--readers rayquet,rayquet-8k,...` adds rayquet with 8,192 rows per batch (the Rust default) to
any workload, for comparison with the package's default of 65,536.

Runs in the venv of the Python package (`pip install ./python -r python/requirements-test.txt`).
Data: `--data DIR` (a directory of lineitem parquet files), else lineitem at `--sf` made by
tpchgen-cli as the peers harness makes it (benches/peers: 8 files, snappy, 7 MiB row groups),
under ~/.cache/rayquet/peers-data/sf<SF>/lineitem (shared with that harness; reused when
present). tpchgen-cli comes from PyPI: `pip install tpchgen-cli==4.0.0` (or `--tpchgen PATH`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

READERS = ["rayquet", "rayquet-lazy", "pyarrow", "polars", "duckdb"]
# rayquet with 8192 rows per batch (the Rust default; the package's is 65536), asked for by
# name in --readers: the before/after of the package's default in one interleaved run.
VARIANTS = {"rayquet-8k": {"batch_size": 8192}}
# The readers of the workloads that are not lineitem reads (the rest take READERS).
TABLE_READERS = {
    "first-batch": ["rayquet", "pyarrow", "duckdb"],
    "iceberg-mor": ["rayquet", "pyiceberg"],
    "delta-dv": ["rayquet", "deltalake"],
}
TABLES = ["iceberg-mor", "delta-dv"]

# The same predicates in each reader's own language (as benches/peers/peers.py).
SQL = {
    "full": None,
    "2col": None,
    "orderkey": "l_orderkey < 1000",
    "air-qty": "l_shipmode = 'AIR' AND l_quantity < 5",
    "shipdate": "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'",
}
COLUMNS = {"2col": ["l_orderkey", "l_extendedprice"]}
WORKLOADS = list(SQL) + ["first-batch"] + TABLES


def polars_filter(pl, key):
    from datetime import date
    from decimal import Decimal

    c = pl.col
    return {
        "orderkey": lambda: c("l_orderkey") < 1000,
        "air-qty": lambda: (c("l_shipmode") == "AIR") & (c("l_quantity") < Decimal("5")),
        "shipdate": lambda: c("l_shipdate").is_between(date(1995, 1, 1), date(1995, 1, 31), closed="both"),
    }[key]()


def pyarrow_filter(pa, pc, schema, key):
    """pyarrow 26 has no compute kernels for string_view (tpchgen's string type): the dataset is
    read with string columns instead, string comparisons cast explicitly (as the peers
    harness does); decimal literals carry the column's type."""
    from datetime import date
    from decimal import Decimal

    f = pc.field

    def s(name):
        return f(name).cast(pa.string())

    def dec(name, text):
        return pa.scalar(Decimal(text), schema.field(name).type)

    return {
        "orderkey": lambda: f("l_orderkey") < 1000,
        "air-qty": lambda: (s("l_shipmode") == "AIR") & (f("l_quantity") < dec("l_quantity", "5")),
        "shipdate": lambda: (f("l_shipdate") >= date(1995, 1, 1)) & (f("l_shipdate") <= date(1995, 1, 31)),
    }[key]()


RAYQUETS = ["rayquet", *VARIANTS]


def table_once(reader, key, tables):
    """One read of a whole table (`iceberg-mor`, `delta-dv`) by `reader`: its row count."""
    kw = VARIANTS.get(reader, {})
    if key == "iceberg-mor":
        location = tables["iceberg"]
        if reader in RAYQUETS:
            import rayquet

            return lambda: rayquet.iceberg(location, **kw).read_all().num_rows
        if reader == "pyiceberg":
            from pyiceberg.table import StaticTable

            return lambda: StaticTable.from_metadata(location).scan().to_arrow().num_rows
    if key == "delta-dv":
        uri = tables["delta"]
        if reader in RAYQUETS:
            import rayquet

            return lambda: rayquet.delta(uri, **kw).read_all().num_rows
        if reader == "deltalake":
            from deltalake import DeltaTable, QueryBuilder

            def once():
                table = DeltaTable(uri)
                return QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all().num_rows

            return once
    raise SystemExit(f"no reader {reader} for {key}")


def first_batch_once(reader, data):
    """The first batch of a full lineitem scan by `reader`: its row count (the rest is not read)."""
    kw = VARIANTS.get(reader, {})
    if reader in RAYQUETS:
        import rayquet

        def once():
            r = rayquet.scan(data, **kw)
            n = next(iter(r)).num_rows
            r.close()
            return n
    elif reader == "pyarrow":
        import pyarrow.dataset as ds

        def once():
            # A reader closed after its first batch (an abandoned `to_batches()` generator can
            # crash the interpreter at exit while its read-ahead runs).
            r = ds.dataset(data, format="parquet").scanner().to_reader()
            n = r.read_next_batch().num_rows
            r.close()
            return n
    elif reader == "duckdb":
        import duckdb

        con = duckdb.connect()
        glob = os.path.join(data, "*.parquet")

        def once():
            r = con.execute(f"SELECT * FROM read_parquet('{glob}')").fetch_record_batch()
            n = r.read_next_batch().num_rows
            r.close()
            return n
    else:
        raise SystemExit(f"no reader {reader} for first-batch")
    return once


def child(spec):
    """Run one reader's workload `runs` times in this process; print one JSON line."""
    reader, key, data, runs = spec["reader"], spec["workload"], spec["data"], spec["runs"]
    columns, sql = COLUMNS.get(key), SQL.get(key)
    glob = os.path.join(data, "*.parquet")
    kw = VARIANTS.get(reader, {})
    if key in TABLES:
        once = table_once(reader, key, spec["tables"])
    elif key == "first-batch":
        once = first_batch_once(reader, data)
    elif reader in RAYQUETS:
        import rayquet

        def once():
            return rayquet.scan(data, columns=columns, filter=sql, **kw).read_all().num_rows
    elif reader in ("polars", "rayquet-lazy"):
        import polars as pl

        if reader == "polars":
            source = lambda: pl.scan_parquet(glob)  # noqa: E731
        else:
            import rayquet.polars as rqpl

            source = lambda: rqpl.scan_parquet(data)  # noqa: E731

        def once():
            # The same polars query over polars' own scan or rayquet's LazyFrame.
            lf = source()
            if sql:
                lf = lf.filter(polars_filter(pl, key))
            if columns:
                lf = lf.select(columns)
            return lf.collect().height
    elif reader == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        def once():
            dataset = ds.dataset(data, format="parquet")
            expr = None
            if sql:
                schema = pa.schema([
                    pa.field(x.name, pa.string() if x.type == pa.string_view() else x.type, x.nullable)
                    for x in dataset.schema])
                dataset = ds.FileSystemDataset(list(dataset.get_fragments()), schema=schema,
                                               format=dataset.format, filesystem=dataset.filesystem)
                expr = pyarrow_filter(pa, pc, schema, key)
            return dataset.to_table(columns=columns, filter=expr).num_rows
    elif reader == "duckdb":
        import duckdb

        con = duckdb.connect()
        query = f"SELECT {', '.join(columns) if columns else '*'} FROM read_parquet('{glob}')"
        if sql:
            query += f" WHERE {sql}"

        def once():
            return con.execute(query).to_arrow_table().num_rows
    else:
        raise SystemExit(f"unknown reader {reader}")
    times, rows = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        n = once()
        times.append(time.perf_counter() - t0)
        rows.append(n)
    print(json.dumps({"times": times, "rows": rows}))


def expected_rows(data, key):
    import duckdb

    q = f"SELECT count(*) FROM read_parquet('{os.path.join(data, '*.parquet')}')"
    if SQL[key]:
        q += f" WHERE {SQL[key]}"
    return duckdb.sql(q).fetchone()[0]


def make_tables(out):
    """The tables of the table workloads under `out` (written once, by the python-tables
    binary of rayquet-bench): {"iceberg", "iceberg_rows", "delta", "delta_rows"}."""
    saved = os.path.join(out, "tables.json")
    if not os.path.isfile(saved):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        cmd = ["cargo", "run", "--release", "--quiet", "-p", "rayquet-bench", "--bin", "python-tables", "--", out]
        print(f"writing the table workloads' tables: {' '.join(cmd)}", file=sys.stderr)
        subprocess.run(cmd, check=True, cwd=root, stdout=subprocess.DEVNULL)
    with open(saved) as f:
        return json.load(f)


def generate(sf, tpchgen):
    base = os.path.expanduser(f"~/.cache/rayquet/peers-data/sf{sf:g}")
    out = os.path.join(base, "lineitem")
    if os.path.isdir(out) and len([f for f in os.listdir(out) if f.endswith(".parquet")]) == 8:
        return out
    if not tpchgen or not os.access(tpchgen, os.X_OK):
        raise SystemExit("no lineitem data: pass --data DIR, or install tpchgen-cli "
                         "(pip install tpchgen-cli==4.0.0) or pass --tpchgen PATH")
    tmp = base + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(base, exist_ok=True)
    cmd = [tpchgen, "parquet", "--scale-factor", f"{sf:g}", "--tables", "lineitem", "--parts", "8",
           "--compression", "SNAPPY", "--row-group-bytes", str(7 * 1024 * 1024), "--output-dir", tmp,
           "--no-progress", "--quiet"]
    print(f"generating lineitem SF {sf:g}: {' '.join(cmd)}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(os.path.join(tmp, "lineitem"), out)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def versions():
    out = {}
    for name in ("rayquet", "pyarrow", "polars", "duckdb", "pyiceberg", "deltalake"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001
            out[name] = "?"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="directory of lineitem parquet files")
    ap.add_argument("--sf", type=float, default=1.0, help="scale factor to generate (default 1)")
    ap.add_argument("--tpchgen", default=shutil.which("tpchgen-cli")
                    or os.path.join(os.path.dirname(sys.executable), "tpchgen-cli"))
    ap.add_argument("--runs", type=int, default=6, help="reads per process (first + warm runs)")
    ap.add_argument("--processes", type=int, default=3,
                    help="processes per reader and workload (medians over them; interleaved)")
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--tables", default=os.path.expanduser("~/.cache/rayquet/python-bench-tables"),
                    help="where the table workloads' tables are (written there when missing)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    data = os.path.abspath(args.data) if args.data else generate(args.sf, args.tpchgen)
    readers, workloads = args.readers.split(","), args.workloads.split(",")
    files = sorted(f for f in os.listdir(data) if f.endswith(".parquet"))
    size = sum(os.path.getsize(os.path.join(data, f)) for f in files)
    print(f"data: {data} ({len(files)} files, {size / 2**20:.0f} MiB); runs per process: {args.runs}; "
          f"{os.cpu_count()} cores; {platform.processor() or platform.machine()}; {versions()}",
          file=sys.stderr)
    tables = make_tables(os.path.abspath(args.tables)) if set(workloads) & set(TABLES) else None
    results = []
    for key in workloads:
        if key in TABLES:
            want = tables["iceberg_rows" if key == "iceberg-mor" else "delta_rows"]
        elif key == "first-batch":
            want = None  # any non-empty first batch
        else:
            want = expected_rows(data, key)
        chosen = [r for r in readers if r in TABLE_READERS.get(key, READERS) or r in VARIANTS]
        if key in TABLE_READERS and args.readers == ",".join(READERS):
            chosen = TABLE_READERS[key]
        firsts, warms, bad = {r: [] for r in chosen}, {r: [] for r in chosen}, {}
        for p in range(args.processes):
            # Readers interleaved, the order rotated per round: load drifts hit all alike.
            for reader in chosen[p % len(chosen):] + chosen[:p % len(chosen)]:
                spec = {"reader": reader, "workload": key, "data": data, "runs": args.runs,
                        "tables": tables}
                r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{reader} {key} failed:\n{r.stderr[-3000:]}", file=sys.stderr)
                    bad[reader] = "FAILED"
                    continue
                out = json.loads(r.stdout.strip().splitlines()[-1])
                times = out["times"]
                if not all(n == want if want is not None else n > 0 for n in out["rows"]):
                    bad[reader] = f"ROWS DIFFER {out['rows']} vs {want}"
                firsts[reader].append(times[0])
                if len(times) > 1:
                    warms[reader].append(statistics.median(times[1:]))
                print(f"{key:10} {reader:8} first {times[0]:.3f}s warm {warms[reader][-1] if warms[reader] else 0:.3f}s",
                      file=sys.stderr)
        for reader in chosen:
            first = statistics.median(firsts[reader]) if firsts[reader] else None
            warm = statistics.median(warms[reader]) if warms[reader] else None
            results.append((key, reader, first, warm, bad.get(reader, f"{want}" if want is not None else "> 0")))
    print("| workload | reader | first (s) | warm (s) | rows |")
    print("| --- | --- | ---: | ---: | ---: |")
    for key, reader, first, warm, rows in results:
        f = f"{first:.3f}" if first is not None else "-"
        w = f"{warm:.3f}" if warm is not None else "-"
        print(f"| {key} | {reader} | {f} | {w} | {rows} |")
    if any("FAILED" in r[4] or "DIFFER" in r[4] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
