#!/usr/bin/env python3
"""rayquet vs polars, pyarrow and duckdb on TPC-H lineitem, locally and over the S3 API.

Run it through `benches/peers/run.sh` (it makes the venv with the pinned versions and builds
rayquet). Direct use: `python peers.py --rayquet-bin PATH [options]` from that venv.

What it does (see BENCHMARKS.md, "Peers"):
  1. generates lineitem with tpchgen-cli (8 parquet files, snappy), reused when present;
  2. cuts two S3 shapes from it (100 files x ~1 MB; 4 files x 2 row groups of ~15 MB);
  3. counts every workload's rows with DuckDB (the reference every reader must match);
  4. serves the shapes over the S3 API on loopback: s3-serve (crates/bench), one process per
     first-byte delay of --delays-ms (0, 30, 100 ms), or moto_server behind delay proxies;
  5. runs every (workload, reader): one warm-up run, then --runs runs, each reader in a fresh
     process, readers interleaved (warm mode, --repeat N: each process scans N times, and the
     median of its runs 2..N is its time, its first run reported beside it); records the reader's in-process time, the process wall
     time, CPU time, peak RSS, rows and (S3) requests seen by the server;
  6. writes peers.json (every run), peers.md (table) and peers.svg (chart) to --out-dir.

Internal subcommands (run in child processes so the parent stays small, see "peak RSS"):
  _one SPEC_JSON        run one reader once and print a JSON line
  _derive ...           cut an S3 shape from the local lineitem
  _reference SPEC_JSON  DuckDB row counts of every workload
  _versions             versions of the Python packages
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

READERS = ["rayquet", "polars", "pyarrow", "duckdb"]
BUCKET = "rayquet-peers"
CREDENTIALS = {"key": "test", "secret": "test", "region": "us-east-1"}

# The filters of the local workloads, in rayquet's (and DuckDB's) SQL. polars and pyarrow get
# the same predicate through their expression APIs (see polars_filter / pyarrow_filter).
FILTERS = {
    "orderkey": "l_orderkey < 1000",
    "air-qty": "l_shipmode = 'AIR' AND l_quantity < 5",
    "shipdate": "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'",
    "null-or-discount": "l_comment IS NULL OR l_discount > 0.09",
    "flags": "l_returnflag IN ('A','N') AND NOT (l_linestatus = 'O')",
}
TWO_COLUMNS = ["l_orderkey", "l_extendedprice"]


def s3_id(shape, suffix, delay_ms):
    """`s3-small-2col` without delay, `s3-small-2col+30ms` with a 30 ms first-byte delay."""
    return f"s3-{shape}{suffix}" + (f"+{delay_ms:g}ms" if delay_ms else "")


def workloads(delays_ms=(0.0, 30.0, 100.0)):
    w = [
        {"id": "local-full", "source": "lineitem", "desc": "local, full scan, all 16 columns"},
        {"id": "local-2col", "source": "lineitem", "columns": TWO_COLUMNS,
         "desc": "local, 2 columns (l_orderkey, l_extendedprice)"},
    ]
    for key, sql in FILTERS.items():
        w.append({"id": f"local-filter-{key}", "source": "lineitem", "filter": key,
                  "desc": f"local, all columns WHERE {sql}"})
    # Over S3: each shape read whole, its two columns, and its rows of one month (the filter a
    # scan can prune row groups and pages by); each at every first-byte delay of --delays-ms.
    reads = (("", {}, "full scan"),
             ("-2col", {"columns": TWO_COLUMNS}, "2 columns (l_orderkey, l_extendedprice)"),
             ("-shipdate", {"filter": "shipdate"}, f"all columns WHERE {FILTERS['shipdate']}"))
    for shape, what in (("small", "100 files x ~1 MB"), ("large", "4 files x 2 row groups of ~15 MB"),
                        ("tiny", "many files (--tiny-files, 10,000) x ~10 KB"),
                        ("huge", "1 file of ~1 GB (--huge-file-bytes) in row groups of ~64 MB")):
        for suffix, extra, read in reads:
            for d in delays_ms:
                held = f", every first byte held {d:g} ms" if d else ""
                w.append({"id": s3_id(shape, suffix, d), "source": shape, "s3": True, "delay_ms": d,
                          "read": suffix, "desc": f"S3 on loopback{held}, {what}, {read}", **extra})
    return w


# ------------------------------------------------------------------------------------------
# Small helpers


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(2)


def sf_name(sf):
    return "sf" + (f"{sf:g}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_hwm_kib():
    """This process's peak RSS (VmHWM) in KiB, from /proc/self/status."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_cpu_seconds(pid):
    """utime + stime of a running process, in seconds (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def run_quiet(cmd, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, **kw).stdout.strip()
    except OSError:
        return None


def json_from_output(text):
    """The last line of `text` that parses as a JSON object."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


RUNNING = set()  # pids of children started by spawn() and not yet reaped (killed on signals)


def spawn(cmd, env, timeout):
    """Run `cmd` to completion in a fresh process. Returns rc, stdout, stderr, the process wall
    time, and the child's own rusage from wait4 (user/sys CPU, ru_maxrss)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        RUNNING.add(p.pid)
        res = {}

        def waiter():
            res["wait"] = os.wait4(p.pid, 0)
            res["end"] = time.perf_counter()

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        t.join(timeout)
        timed_out = t.is_alive()
        if timed_out:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            t.join()
        RUNNING.discard(p.pid)
        _, status, ru = res["wait"]
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4 already
        out.seek(0)
        err.seek(0)
        return {
            "rc": p.returncode,
            "timed_out": timed_out,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
            "wall": res["end"] - start,
            "cpu_user": ru.ru_utime,
            "cpu_sys": ru.ru_stime,
            "ru_maxrss_kib": ru.ru_maxrss,
        }


# ------------------------------------------------------------------------------------------
# Child: one reader, once


def polars_filter(pl, key):
    from datetime import date
    from decimal import Decimal

    c = pl.col
    return {
        "orderkey": lambda: c("l_orderkey") < 1000,
        "air-qty": lambda: (c("l_shipmode") == "AIR") & (c("l_quantity") < Decimal("5")),
        "shipdate": lambda: c("l_shipdate").is_between(date(1995, 1, 1), date(1995, 1, 31), closed="both"),
        "null-or-discount": lambda: c("l_comment").is_null() | (c("l_discount") > Decimal("0.09")),
        "flags": lambda: c("l_returnflag").is_in(["A", "N"]) & ~(c("l_linestatus") == "O"),
    }[key]()


def pyarrow_filter(pa, pc, schema, key):
    """pyarrow 26 has no kernels for string_view (tpchgen's string type): the dataset is read
    with string columns instead (see `no_views`), and string comparisons go through an explicit
    cast, else row-group pruning binds the literal against the files' string_view statistics
    and fails. Decimal literals carry the column's type (int/float literals would not bind)."""
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
        "null-or-discount": lambda: f("l_comment").is_null() | (f("l_discount") > dec("l_discount", "0.09")),
        "flags": lambda: s("l_returnflag").isin(["A", "N"]) & ~(s("l_linestatus") == "O"),
    }[key]()


def duckdb_httpfs_path():
    """The httpfs extension file shipped by the duckdb-extension-httpfs wheel (PyPI), for
    `LOAD '<path>'`: DuckDB's own extension repository is not reachable here."""
    import duckdb
    import duckdb_extension_httpfs

    base = os.path.join(os.path.dirname(duckdb_extension_httpfs.__file__), "extensions")
    path = os.path.join(base, f"v{duckdb.__version__}", "httpfs.duckdb_extension")
    if not os.path.exists(path):
        found = os.listdir(base) if os.path.isdir(base) else []
        raise RuntimeError(f"no httpfs extension for duckdb {duckdb.__version__} in {base} (has {found})")
    return path


def child_one(spec):
    """Run the read described by `spec` `repeat` times in this process and print one JSON line
    (`seconds`: the first run; `runs`: every run). Each run's timer starts after the imports and
    thread/IO configuration and covers discovery (listing, footers), the read and the
    materialization (or draining) of the result. Every run builds its scan anew (a new lazy
    frame, dataset or query), as a service answering requests would."""
    reader = spec["reader"]
    threads = spec["threads"]
    columns = spec.get("columns")
    fkey = spec.get("filter")
    loc = spec["location"]
    mode = spec["peer_output"]
    repeat = spec.get("repeat", 1)
    s3 = loc["kind"] == "s3"
    info = {}
    if reader == "polars":
        import polars as pl

        if s3:
            src = f"s3://{loc['bucket']}/{loc['prefix']}/*.parquet"
            kw = {"storage_options": {
                "aws_endpoint_url": loc["endpoint"], "aws_allow_http": "true",
                "aws_region": CREDENTIALS["region"], "aws_access_key_id": CREDENTIALS["key"],
                "aws_secret_access_key": CREDENTIALS["secret"]}, "credential_provider": None}
        else:
            src, kw = os.path.join(loc["path"], "*.parquet"), {}
        info["threads"] = pl.thread_pool_size()

        def once():
            lf = pl.scan_parquet(src, **kw)
            if fkey:
                lf = lf.filter(polars_filter(pl, fkey))
            if columns:
                lf = lf.select(columns)
            if mode == "collect":
                return lf.collect().height
            return sum(b.height for b in lf.collect_batches())
    elif reader == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        import pyarrow.fs as pafs

        pa.set_cpu_count(threads)
        pa.set_io_thread_count(spec["pyarrow_io_threads"])
        fs = None
        if s3:
            fs = pafs.S3FileSystem(
                access_key=CREDENTIALS["key"], secret_key=CREDENTIALS["secret"],
                region=CREDENTIALS["region"], scheme="http",
                endpoint_override=loc["endpoint"].split("://", 1)[1])
            path = f"{loc['bucket']}/{loc['prefix']}"
        else:
            path = loc["path"]
        info.update(cpu_count=pa.cpu_count(), io_thread_count=pa.io_thread_count())

        def once():
            dataset = ds.dataset(path, format="parquet", filesystem=fs)
            expr = None
            if fkey:
                # Same fragments (no second listing), string instead of string_view columns.
                schema = pa.schema([
                    pa.field(x.name, pa.string() if x.type == pa.string_view() else x.type, x.nullable)
                    for x in dataset.schema])
                dataset = ds.FileSystemDataset(list(dataset.get_fragments()), schema=schema,
                                               format=dataset.format, filesystem=dataset.filesystem)
                expr = pyarrow_filter(pa, pc, schema, fkey)
            if mode == "collect":
                return dataset.to_table(columns=columns, filter=expr).num_rows
            return sum(b.num_rows for b in dataset.to_batches(columns=columns, filter=expr))
    elif reader == "duckdb":
        import duckdb

        con = duckdb.connect(config={"threads": threads})
        if s3:
            con.execute(f"LOAD '{duckdb_httpfs_path()}'")
            host = loc["endpoint"].split("://", 1)[1]
            con.execute(
                "CREATE SECRET peers (TYPE s3, KEY_ID '{key}', SECRET '{secret}', REGION '{region}', "
                "ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)".format(host=host, **CREDENTIALS))
            src = f"s3://{loc['bucket']}/{loc['prefix']}/*.parquet"
        else:
            src = os.path.join(loc["path"], "*.parquet")
        info["threads"] = con.execute("SELECT current_setting('threads')").fetchone()[0]
        sql = f"SELECT {', '.join(columns) if columns else '*'} FROM read_parquet('{src}')"
        if fkey:
            sql += f" WHERE {FILTERS[fkey]}"

        def once():
            result = con.execute(sql)
            if mode == "collect":
                return result.to_arrow_table().num_rows
            return sum(b.num_rows for b in result.to_arrow_reader())
    else:
        raise SystemExit(f"unknown reader {reader}")
    runs = []
    rows = None
    for i in range(repeat):
        t0 = time.perf_counter()
        n = once()
        runs.append(time.perf_counter() - t0)
        if rows is not None and n != rows:
            raise SystemExit(f"run {i + 1} delivered {n} rows, the first {rows}")
        rows = n
    print(json.dumps({"rows": rows, "seconds": runs[0], "runs": runs, "vm_hwm_kib": vm_hwm_kib(),
                      "info": info}))


# ------------------------------------------------------------------------------------------
# Child: derive an S3 shape, reference counts, versions


def child_derive(args):
    """Cut `files` x `row_groups` row groups of ~`target_bytes` (compressed) from the first rows
    of the local lineitem; scaled down proportionally when the source has too few rows, or with
    `--cycle`, its rows repeated from the start (the huge shape: one file larger than SF1)."""
    import pyarrow
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    src = ds.dataset(args.src, format="parquet")
    total_rows = 0
    total_bytes = 0
    for frag in src.get_fragments():
        total_rows += frag.metadata.num_rows
        total_bytes += os.path.getsize(frag.path)
    bytes_per_row = total_bytes / total_rows
    groups = args.files * args.row_groups
    rows_per_group = max(1, round(args.target_bytes / bytes_per_row))
    scaled = groups * rows_per_group > total_rows and not args.cycle
    if scaled:
        rows_per_group = total_rows // groups
    table = src.head(min(groups * rows_per_group, total_rows))
    tmp = args.out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    width = len(str(args.files - 1))
    for i in range(args.files):
        # Row group by row group, so a cycled file never sits whole in memory.
        with pq.ParquetWriter(os.path.join(tmp, f"part-{i:0{width}d}.parquet"), table.schema,
                              compression="snappy", write_statistics=True,
                              write_page_index=True) as writer:
            for g in range(args.row_groups):
                start = ((i * args.row_groups + g) * rows_per_group) % table.num_rows
                part = table.slice(start, rows_per_group)
                while part.num_rows < rows_per_group:
                    part = pyarrow.concat_tables(
                        [part, table.slice(0, rows_per_group - part.num_rows)])
                writer.write_table(part, row_group_size=rows_per_group)
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(tmp, args.out)
    sizes = []
    rg_sizes = []
    for name in sorted(os.listdir(args.out)):
        path = os.path.join(args.out, name)
        sizes.append(os.path.getsize(path))
        md = pq.ParquetFile(path).metadata
        rg_sizes += [sum(md.row_group(g).column(c).total_compressed_size for c in range(md.num_columns))
                     for g in range(md.num_row_groups)]

    print(json.dumps({
        "files": args.files, "row_groups_per_file": args.row_groups,
        "rows_per_row_group": rows_per_group, "rows": groups * rows_per_group,
        "bytes": sum(sizes), "file_bytes_min": min(sizes), "file_bytes_max": max(sizes),
        "row_group_bytes_mean": sum(rg_sizes) / len(rg_sizes),
        "target_row_group_bytes": args.target_bytes, "scaled_down": scaled,
        "source_rows": total_rows, "cycled": groups * rows_per_group > total_rows,
        "writer": f"pyarrow {pyarrow.__version__}: snappy, statistics, page index, "
                  f"row_group_size={rows_per_group}",
    }))


def child_reference(spec):
    """DuckDB's row count for each workload (the count every reader must deliver)."""
    import duckdb

    con = duckdb.connect(config={"threads": spec["threads"]})
    counts = {}
    for w in spec["workloads"]:
        sql = f"SELECT count(*) FROM read_parquet('{os.path.join(w['path'], '*.parquet')}')"
        if w.get("filter"):
            sql += f" WHERE {FILTERS[w['filter']]}"
        counts[w["id"]] = con.execute(sql).fetchone()[0]
    print(json.dumps(counts))


def child_versions():
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("polars", "polars-runtime-32", "pyarrow", "duckdb", "duckdb-extension-httpfs",
                "tpchgen-cli", "moto", "boto3", "werkzeug"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    try:
        import duckdb

        con = duckdb.connect()
        con.execute(f"LOAD '{duckdb_httpfs_path()}'")
        out["duckdb_httpfs"] = "loads (signed extension from the duckdb-extension-httpfs wheel)"
    except Exception as e:  # noqa: BLE001 - reported, duckdb is then skipped on S3
        out["duckdb_httpfs"] = f"ERROR: {e}"
    print(json.dumps(out))


# ------------------------------------------------------------------------------------------
# Parent: data


def generate_lineitem(args, data_dir):
    """tpchgen-cli lineitem at the scale factor: 8 files, snappy, 7 MiB row groups."""
    base = os.path.join(data_dir, sf_name(args.scale_factor))
    out = os.path.join(base, "lineitem")
    marker = os.path.join(base, "lineitem.json")
    params = {"scale_factor": args.scale_factor, "parts": 8, "compression": "SNAPPY",
              "row_group_bytes": 7 * 1024 * 1024, "tool": run_quiet([args.tpchgen, "--version"])}
    if os.path.exists(marker):
        with open(marker) as f:
            have = json.load(f)
        if have.get("params") == params and all(
                os.path.exists(os.path.join(out, f"lineitem.{i}.parquet")) for i in range(1, 9)):
            log(f"lineitem: reusing {out}")
            return out, have
    log(f"lineitem: generating SF {args.scale_factor:g} into {out} (tpchgen-cli)")
    tmp = base + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(base, exist_ok=True)
    cmd = [args.tpchgen, "parquet", "--scale-factor", f"{args.scale_factor:g}", "--tables", "lineitem",
           "--parts", "8", "--compression", "SNAPPY", "--row-group-bytes", str(params["row_group_bytes"]),
           "--output-dir", tmp, "--no-progress", "--quiet"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(os.path.join(tmp, "lineitem"), out)
    shutil.rmtree(tmp, ignore_errors=True)
    have = {"params": params, "command": cmd, "seconds": time.time() - t0,
            "bytes": sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))}
    with open(marker, "w") as f:
        json.dump(have, f, indent=1)
    return out, have


def derive_shape(args, lineitem, data_dir, name, files, row_groups, target_bytes, cycle=False):
    base = os.path.join(data_dir, sf_name(args.scale_factor))
    out = os.path.join(base, f"s3-{name}")
    marker = os.path.join(base, f"s3-{name}.json")
    params = {"files": files, "row_groups": row_groups, "target_bytes": target_bytes, "cycle": cycle,
              "source": os.path.getmtime(os.path.join(base, "lineitem.json"))}
    if os.path.exists(marker):
        with open(marker) as f:
            have = json.load(f)
        if have.get("params") == params and os.path.isdir(out) and len(os.listdir(out)) == files:
            log(f"shape {name}: reusing {out}")
            return out, have
    log(f"shape {name}: writing {files} files x {row_groups} row groups of ~{target_bytes / 1e6:g} MB")
    r = spawn([sys.executable, __file__, "_derive", "--src", lineitem, "--out", out,
               "--files", str(files), "--row-groups", str(row_groups),
               "--target-bytes", str(target_bytes)] + (["--cycle"] if cycle else []),
              os.environ.copy(), 3600)
    shape = json_from_output(r["stdout"])
    if r["rc"] != 0 or shape is None:
        die(f"deriving shape {name} failed:\n{r['stderr'][-3000:]}")
    have = {"params": params, "shape": shape}
    with open(marker, "w") as f:
        json.dump(have, f, indent=1)
    return out, have


# ------------------------------------------------------------------------------------------
# Parent: servers


class Servers:
    """The processes this run started (moto, proxies); stopped on exit, also on signals. Their
    pids also go to --pid-file so run.sh's trap can stop them if this process is killed."""

    def __init__(self, pid_file):
        self.procs = []
        self.pid_file = pid_file

    def add(self, proc):
        self.procs.append(proc)
        self._write()

    def _write(self):
        if self.pid_file:
            with open(self.pid_file, "w") as f:
                f.write("".join(f"{p.pid}\n" for p in self.procs if p.poll() is None))

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 5
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.procs = []
        self._write()


def http_request(endpoint, method, path, body=None, length=None, timeout=30, headers=None):
    """One unsigned request (moto accepts them for buckets and public-read objects); returns
    (status, body bytes)."""
    import http.client

    host, port = endpoint.split("://", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        headers = dict(headers or {})
        if length is not None:
            headers["Content-Length"] = str(length)
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def start_moto(args, servers, log_path):
    """moto_server on a free loopback port; returns (endpoint, Popen)."""
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    cmd = [moto] if os.path.exists(moto) else [sys.executable, "-m", "moto.server"]
    last = ""
    for _ in range(3):
        port = free_port()
        logf = open(log_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        p = subprocess.Popen(cmd + ["-H", "127.0.0.1", "-p", str(port)], stdin=subprocess.DEVNULL,
                             stdout=logf, stderr=logf, env=env, start_new_session=True)
        logf.close()
        servers.add(p)
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while time.time() < deadline and p.poll() is None:
            try:
                http_request(endpoint, "GET", "/", timeout=2)
                return endpoint, p
            except OSError:
                time.sleep(0.2)
        with open(log_path, errors="replace") as f:
            last = f.read()[-1500:]
        servers.stop()
    die(f"moto_server did not start ({' '.join(cmd)}); log {log_path}:\n{last}")


def start_announcing(servers, cmd):
    """Start `cmd`, a server that prints `PORT <n>` once it listens on loopback; returns
    (endpoint, Popen)."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    servers.add(p)
    line = p.stdout.readline()
    if not line.startswith("PORT "):
        die(f"{' '.join(cmd)} did not start: {line!r}")
    return f"http://127.0.0.1:{int(line.split()[1])}", p


def start_proxy(servers, upstream, delay_ms):
    return start_announcing(servers, [sys.executable, os.path.join(HERE, "delay_proxy.py"), "--upstream",
                                      upstream.split("://", 1)[1], "--delay-ms", str(delay_ms)])


def start_s3_serve(args, servers, root, delay_ms):
    """`s3-serve` over `root` holding every first byte `delay_ms`; returns (endpoint, Popen)."""
    return start_announcing(servers, [args.s3_serve_bin, "--root", root, "--delay-ms", f"{delay_ms:g}",
                                      "--threads", "2"])


def s3_serve_root(data_dir, shape_dirs, shapes):
    """A root for s3-serve: the bucket a directory of links to the shapes' directories."""
    root = os.path.join(data_dir, "s3-serve-root")
    bucket = os.path.join(root, BUCKET)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(bucket)
    for name in shapes:
        os.symlink(shape_dirs[name], os.path.join(bucket, name))
    return root


class ServeStats:
    """Counts the requests an s3-serve answered between two marks (its `/__stats`)."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.before = self._read()

    def _read(self):
        status, body = http_request(self.endpoint, "GET", "/__stats")
        if status != 200:
            die(f"s3-serve stats at {self.endpoint}: HTTP {status}")
        return json.loads(body)

    def mark(self):
        self.before = self._read()

    def since_mark(self):
        after = self._read()
        d = {k: after[k] - self.before[k] for k in after}
        # The stats request of since_mark itself is counted in `after`.
        return {"requests": d["requests"] - 1, "list": d["lists"], "get": d["gets"], "head": d["heads"],
                "other": d["puts"], "errors": d["errors"], "bytes": d["bytes_sent"],
                "connections": d["connections"] - 1}


def upload_dir(endpoint, local_dir, prefix):
    for name in sorted(os.listdir(local_dir)):
        path = os.path.join(local_dir, name)
        with open(path, "rb") as f:
            status, body = http_request(endpoint, "PUT", f"/{BUCKET}/{prefix}/{name}", body=f,
                                        length=os.path.getsize(path), timeout=120,
                                        # readable by the harness's unsigned GETs (bound, probe)
                                        headers={"x-amz-acl": "public-read"})
        if status != 200:
            die(f"upload of {name} to {endpoint}: HTTP {status} {body[:300]!r}")


def measure_transfer(endpoint, prefix, names, concurrency):
    """GET every object of a shape concurrently with plain HTTP (no parquet): seconds, bytes."""
    import http.client
    from concurrent.futures import ThreadPoolExecutor

    host, port = endpoint.split("://", 1)[1].rsplit(":", 1)
    local = threading.local()

    def get(name):
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        local.conn.request("GET", f"/{BUCKET}/{prefix}/{name}")
        resp = local.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {name}: HTTP {resp.status}")
        return len(data)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as ex:
        total = sum(ex.map(get, names))
    return time.perf_counter() - t0, total


def time_to_first_byte(endpoint, path, n=3):
    """Times of `n` 1-byte GETs (one connection object; moto closes it after each response,
    http.client then reconnects)."""
    import http.client

    host, port = endpoint.split("://", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    out = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            conn.request("GET", path, headers={"Range": "bytes=0-0"})
            resp = conn.getresponse()
            resp.read()
            out.append(time.perf_counter() - t0)
            if resp.status not in (200, 206):
                raise RuntimeError(f"GET {path} via {endpoint}: HTTP {resp.status}")
    finally:
        conn.close()
    return out


class MotoLog:
    """Counts the requests moto logs (werkzeug access log lines) between two marks."""

    # werkzeug colours error lines: "\x1b[31m\x1b[1mGET /b/k HTTP/1.1\x1b[0m" 403 -
    LINE = re.compile(r'"(?:\x1b\[[0-9;]*m)*(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/[\d.]+(?:\x1b\[[0-9;]*m)*" (\d+)')

    def __init__(self, path):
        self.path = path
        self.offset = os.path.getsize(path)

    def mark(self):
        self.offset = os.path.getsize(self.path)

    def since_mark(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            text = f.read().decode(errors="replace")
        counts = {"requests": 0, "list": 0, "get": 0, "head": 0, "other": 0, "errors": 0}
        for m in self.LINE.finditer(text):
            method, path, status = m.group(1), m.group(2), int(m.group(3))
            counts["requests"] += 1
            if status >= 400:
                counts["errors"] += 1
            if method == "GET" and ("list-type" in path or "prefix=" in path or path.rstrip("/") == f"/{BUCKET}"
                                    or path.startswith(f"/{BUCKET}?")):
                counts["list"] += 1
            elif method == "GET":
                counts["get"] += 1
            elif method == "HEAD":
                counts["head"] += 1
            else:
                counts["other"] += 1
        return counts


# ------------------------------------------------------------------------------------------
# Parent: running readers


def reader_command(args, reader, w, location):
    """argv and extra env of one run of `reader` on workload `w`."""
    if reader == "rayquet":
        if location["kind"] == "s3":
            cmd = [args.rayquet_bin, "scan", f"s3://{location['bucket']}/{location['prefix']}/"]
            for k, v in (("aws_endpoint", location["endpoint"]), ("aws_allow_http", "true"),
                         ("aws_region", CREDENTIALS["region"]), ("aws_access_key_id", CREDENTIALS["key"]),
                         ("aws_secret_access_key", CREDENTIALS["secret"])):
                cmd += ["--option", f"{k}={v}"]
        else:
            cmd = [args.rayquet_bin, "scan", location["path"]]
        cmd.append("--json")
        if args.repeat > 1:
            cmd += ["--repeat", str(args.repeat)]
        if args.rayquet_footer_cache:
            cmd += ["--footer-cache", args.rayquet_footer_cache]
        if args.rayquet_mmap and location["kind"] != "s3":
            cmd.append("--mmap")
        if w.get("columns"):
            cmd += ["--columns", ",".join(w["columns"])]
        if w.get("filter"):
            cmd += ["--filter", FILTERS[w["filter"]]]
        return cmd
    spec = {"reader": reader, "threads": args.threads, "columns": w.get("columns"),
            "filter": w.get("filter"), "location": location, "peer_output": args.peer_output,
            "repeat": args.repeat,
            "pyarrow_io_threads": args.pyarrow_io_threads_s3 if location["kind"] == "s3"
            else args.pyarrow_io_threads_local}
    return [sys.executable, __file__, "_one", json.dumps(spec)]


def child_env(args):
    env = dict(os.environ)
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(k, None)
    t = str(args.threads)
    env.update({
        "POLARS_MAX_THREADS": t,        # polars' thread pool
        "RAYON_NUM_THREADS": t,         # rayquet's decode pool (its IO runtime has 2 threads)
        "OMP_NUM_THREADS": t,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ACCESS_KEY_ID": CREDENTIALS["key"], "AWS_SECRET_ACCESS_KEY": CREDENTIALS["secret"],
        "AWS_REGION": CREDENTIALS["region"], "AWS_DEFAULT_REGION": CREDENTIALS["region"],
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


GNU_TIME = "/usr/bin/time"


def gnu_time_works():
    try:
        with tempfile.NamedTemporaryFile("r") as f:
            subprocess.run([GNU_TIME, "-f", "%M", "-o", f.name, "true"], check=True,
                           capture_output=True)
            return f.read().strip().isdigit()
    except (OSError, subprocess.CalledProcessError):
        return False


def one_run(args, env, reader, w, location, expected, counter, watched):
    cmd = reader_command(args, reader, w, location)
    time_file = None
    if reader == "rayquet" and args.gnu_time:
        # rayquet reports no peak RSS; GNU time (a tiny parent) measures it without carrying
        # this Python process's RSS into it (see "peak RSS" in BENCHMARKS.md).
        time_file = tempfile.NamedTemporaryFile("r", suffix=".time")
        cmd = [GNU_TIME, "-f", "%M", "-o", time_file.name] + cmd
    if counter:
        counter.mark()
    cpu_before = {name: proc_cpu_seconds(p.pid) for name, p in watched.items()}
    r = spawn(cmd, env, args.timeout)
    run = {"reader": reader, "workload": w["id"], "rc": r["rc"], "process_wall": r["wall"],
           "cpu_user": r["cpu_user"], "cpu_sys": r["cpu_sys"], "ru_maxrss_kib": r["ru_maxrss_kib"],
           "loadavg_after": loadavg()}
    if watched:
        time.sleep(0.05)  # let the server log its last lines
        for name, p in watched.items():
            after = proc_cpu_seconds(p.pid)
            if after is not None and cpu_before[name] is not None:
                run[f"{name}_cpu_s"] = after - cpu_before[name]
    if counter:
        run["server_requests"] = counter.since_mark()
    out = json_from_output(r["stdout"])
    if r["rc"] != 0 or out is None:
        tail = (r["stderr"].strip() or r["stdout"].strip())[-1500:]
        run["error"] = ("timed out after %ss; " % args.timeout if r["timed_out"] else "") + tail
        run["ok"] = False
        return run
    run["rows"] = out.get("rows")
    runs = out.get("runs") or [out.get("seconds")]
    run["runs"] = runs
    run["first_seconds"] = runs[0]
    # Warm mode: the reader's time is the median of its runs after the first in the process.
    run["seconds"] = statistics.median(runs[1:]) if args.repeat > 1 else runs[0]
    if reader == "rayquet":
        run["peak_rss_kib"] = r["ru_maxrss_kib"]
        if time_file is not None:
            text = time_file.read().strip().splitlines()
            time_file.close()
            if text and text[-1].isdigit():
                run["peak_rss_kib"] = int(text[-1])
                run["peak_rss_source"] = "GNU time %M"
        run["rayquet"] = {k: out.get(k) for k in ("requests", "bytes_fetched", "files", "row_groups",
                                                  "row_groups_pruned", "pages_pruned", "rows_filtered",
                                                  "io_seconds", "decode_seconds", "peak_buffered_bytes")}
    else:
        run["peak_rss_kib"] = out.get("vm_hwm_kib") or r["ru_maxrss_kib"]
        run["info"] = out.get("info")
    run["rows_ok"] = run["rows"] == expected
    run["ok"] = run["rows_ok"]
    if args.repeat > 1 and len(runs) != args.repeat:
        run["ok"] = False
        run["error"] = f"{len(runs)} runs reported, {args.repeat} asked"
    if not run["rows_ok"]:
        run["error"] = f"ROWS DIFFER: {run['rows']} rows, expected {expected}"
    return run


def summarize(runs):
    ok = [r for r in runs if r.get("ok") and r.get("run", 0) > 0]
    if not ok:
        return None
    secs = [r["seconds"] for r in ok]
    walls = [r["process_wall"] for r in ok]
    cpu = [r["cpu_user"] + r["cpu_sys"] for r in ok]
    s = {"n": len(ok), "median": statistics.median(secs), "min": min(secs), "max": max(secs),
         "process_wall_median": statistics.median(walls), "cpu_median": statistics.median(cpu),
         "peak_rss_mib_max": max(r["peak_rss_kib"] for r in ok) / 1024,
         "peak_rss_mib_median": statistics.median(r["peak_rss_kib"] for r in ok) / 1024,
         "rows": ok[0]["rows"]}
    firsts = [r["first_seconds"] for r in ok if r.get("first_seconds") is not None]
    if firsts:
        s["first_median"] = statistics.median(firsts)
        s["first_over_warm"] = s["first_median"] / s["median"] if s["median"] else None
    reqs = [r["server_requests"]["requests"] for r in ok if "server_requests" in r]
    if reqs:
        s["requests_median"] = statistics.median(reqs)
    server = [r["server_cpu_s"] for r in ok if "server_cpu_s" in r]
    if server:
        s["server_cpu_median"] = statistics.median(server)
    proxy = [r["proxy_cpu_s"] for r in ok if "proxy_cpu_s" in r]
    if proxy:
        s["proxy_cpu_median"] = statistics.median(proxy)
    return s


# ------------------------------------------------------------------------------------------
# Parent: reports


def fmt_s(x):
    return "–" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.2f}")


def markdown(result):
    m = result["meta"]
    v = m["versions"]
    warm = m.get("repeat", 1)
    lines = [
        f"Peers: {m['mode']} run, lineitem SF {m['scale_factor']:g} ({m['lineitem']['bytes'] / 2**20:.1f} MiB, "
        f"8 files, snappy, tpchgen-cli {v.get('tpchgen-cli')}), {m['runs']} runs after {m['warmup']} warm-up, "
        f"{m['threads']} threads per reader, peers' output: `{m['peer_output']}`; "
        f"commit `{m['commit']}`, {m['date']}.",
        f"{m['rayquet_version']}, polars {v.get('polars')}, pyarrow {v.get('pyarrow')}, "
        f"duckdb {v.get('duckdb')}, S3 server {m.get('server', 'moto')}"
        + (f" {v.get('moto')}" if m.get("server", "moto") == "moto" else "") + f", Python {v.get('python')}; "
        f"{m['machine']['cpus']} CPUs ({m['machine']['cpu_model']}), load average at start "
        f"{' '.join(f'{x:.2f}' for x in (m['machine']['loadavg_start'] or []))}.",
        "",
        ("Seconds: the reader's own timer around the read (median, min-max of the runs); process: the "
         "median wall time of the whole process (start-up and imports included); vs rq: median / "
         "rayquet's median (>1: rayquet is faster); CPU: user+sys seconds of the process; RSS: peak; "
         "reqs: requests the S3 server saw; server CPU: the S3 server's CPU seconds during the run.")
        if warm == 1 else
        (f"Warm mode: every reader process runs the scan {warm} times. Seconds: per process, the median "
         f"of its runs 2-{warm} (the warm time), then the median (min-max) over the {m['runs']} processes; "
         "first s: the median of the processes' first runs; first/warm: their ratio; process: the "
         "median wall time of the whole process (all its runs, start-up and imports included); vs rq: "
         "warm median / rayquet's (>1: rayquet is faster); CPU: user+sys seconds of the process (all "
         "runs); RSS: peak; reqs: requests the S3 server saw (all runs); server CPU: the S3 server's CPU seconds."
         + (f" rayquet's runs share one footer cache (--footer-cache {m['rayquet_footer_cache']})."
            if m.get("rayquet_footer_cache") else "")
         + (" rayquet maps local files into memory (--mmap), as polars does by default."
            if m.get("rayquet_mmap") else "")),
        "",
        "| workload | reader | median s | min-max s |" + (" first s | first/warm |" if warm > 1 else "")
        + " process s | vs rq | CPU s | RSS MiB | rows | reqs | server CPU s |",
        "| --- | --- | ---: | ---: |" + (" ---: | ---: |" if warm > 1 else "")
        + " ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    blank = " |" * (2 if warm > 1 else 0)
    for w in result["workloads"]:
        rq = w["summary"].get("rayquet")
        for reader in m["readers"]:
            s = w["summary"].get(reader)
            if w.get("skipped", {}).get(reader):
                lines.append(f"| {w['id']} | {reader} | skipped: {w['skipped'][reader]} | | | | | | | | |{blank}")
                continue
            if not s:
                err = next((r.get("error", "") for r in result["runs"]
                            if r["workload"] == w["id"] and r["reader"] == reader and r.get("error")), "")
                last = (err.strip().splitlines() or [""])[-1]
                lines.append(f"| {w['id']} | {reader} | FAILED | {last[:100].replace('|', '/')} | | | | | | | |{blank}")
                continue
            ratio = f"{s['median'] / rq['median']:.2f}x" if rq else "–"
            reqs = f"{s['requests_median']:.0f}" if "requests_median" in s else "–"
            server = f"{s['server_cpu_median']:.2f}" if "server_cpu_median" in s else "–"
            first = ""
            if warm > 1:
                fw = s.get("first_over_warm")
                first = f"{fmt_s(s.get('first_median'))} | {'–' if fw is None else f'{fw:.2f}x'} | "
            lines.append(
                f"| {w['id']} | {reader} | {fmt_s(s['median'])} | {fmt_s(s['min'])}-{fmt_s(s['max'])} | "
                f"{first}{fmt_s(s['process_wall_median'])} | {ratio} | {s['cpu_median']:.2f} | "
                f"{s['peak_rss_mib_max']:.0f} | {s['rows']} | {reqs} | {server} |")
    lines.append("")
    lines.append("Workloads:")
    for w in result["workloads"]:
        lines.append(f"- `{w['id']}`: {w['desc']}; {w['expected_rows']} rows")
    shapes = m.get("shapes") or {}
    for name, sh in shapes.items():
        lines.append(
            f"- shape `{name}`: {sh['files']} files x {sh['row_groups_per_file']} row groups, "
            f"{sh['rows']} rows, {sh['bytes'] / 2**20:.1f} MiB (files {sh['file_bytes_min'] / 1e6:.2f}-"
            f"{sh['file_bytes_max'] / 1e6:.2f} MB, row groups ~{sh['row_group_bytes_mean'] / 1e6:.2f} MB)"
            + (" — scaled down: the source has too few rows" if sh["scaled_down"] else ""))
    bounds = m.get("bounds") or {}
    if bounds:
        lines += ["", "Latency bounds of the full scans (formula in BENCHMARKS.md, \"S3 shapes\"):", "",
                  "| workload | round trips | delay ms | MiB | transfer s | plain GETs s | latency bound s | practical bound s | "
                  + " | ".join(f"{r} / bound" for r in m["readers"]) + " |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in m["readers"]) + " |"]
        for wid, b in bounds.items():
            w = next(x for x in result["workloads"] if x["id"] == wid)
            cells = []
            for reader in m["readers"]:
                s = w["summary"].get(reader)
                cells.append(f"{s['median'] / b['latency_bound_s']:.2f}x" if s else "–")
            lines.append(
                f"| {wid} | {b['round_trips']} | {b['delay_ms']:g} | {b['bytes'] / 2**20:.1f} | "
                f"{b['transfer_s']:.3f} | {b['plain_get_s']:.3f} | {b['latency_bound_s']:.3f} | "
                f"{fmt_s(b.get('practical_bound_s'))} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def svg(result):
    """Small multiples: one panel per workload (own scale), one bar per reader (median, with a
    min-max whisker)."""
    m = result["meta"]
    readers = m["readers"]
    colors = {"rayquet": "#d9480f", "polars": "#1c7ed6", "pyarrow": "#2b8a3e", "duckdb": "#e8b100"}
    ws = [w for w in result["workloads"] if w["summary"]]
    cols = 3
    pw, ph = 300, 40 + 26 * len(readers) + 22
    rows = max(1, math.ceil(len(ws) / cols))
    width, height = cols * pw + 20, rows * ph + 70
    esc = (lambda s: str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{esc(m["title"])}</text>',
           f'<text x="10" y="38" fill="#555">seconds (reader\'s own timer{", warm: median of runs 2-" + str(m.get("repeat")) + " in each process" if m.get("repeat", 1) > 1 else ""}), median of {m["runs"]} runs, '
           f'whisker min-max; each panel on its own scale; {m["threads"]} threads per reader</text>']
    for i, w in enumerate(ws):
        x0 = 10 + (i % cols) * pw
        y0 = 55 + (i // cols) * ph
        out.append(f'<text x="{x0}" y="{y0 + 12}" font-weight="bold">{esc(w["id"])}</text>')
        top = max((s["max"] for s in w["summary"].values() if s), default=1) or 1
        bar_x, bar_w = x0 + 62, pw - 62 - 70
        for j, reader in enumerate(readers):
            y = y0 + 22 + j * 26
            out.append(f'<text x="{x0}" y="{y + 13}">{esc(reader)}</text>')
            s = w["summary"].get(reader)
            if not s:
                out.append(f'<text x="{bar_x}" y="{y + 13}" fill="#c00">{"skipped" if w.get("skipped", {}).get(reader) else "failed"}</text>')
                continue
            bw = bar_w * s["median"] / top
            out.append(f'<rect x="{bar_x}" y="{y + 2}" width="{bw:.1f}" height="16" '
                       f'fill="{colors.get(reader, "#888")}"/>')
            x1, x2 = bar_x + bar_w * s["min"] / top, bar_x + bar_w * s["max"] / top
            out.append(f'<line x1="{x1:.1f}" y1="{y + 10}" x2="{x2:.1f}" y2="{y + 10}" stroke="#222"/>')
            out.append(f'<text x="{bar_x + bw + 4 if x2 < bar_x + bw + 4 else x2 + 4:.1f}" y="{y + 13}">'
                       f'{fmt_s(s["median"])} s</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------
# Parent: main


def machine_info():
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    thp = None
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.read().strip()
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "mem_bytes": mem, "kernel": platform.release(),
            "thp": thp, "loadavg_start": loadavg(), "hostname": socket.gethostname()}


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="benches/peers/run.sh",
        description="rayquet vs polars, pyarrow, duckdb on TPC-H lineitem (local and S3 on loopback).")
    ap.add_argument("--quick", action="store_true",
                    help="plumbing check: SF 0.1, 1 run (after the warm-up), outputs named peers-quick.*")
    ap.add_argument("--scale-factor", "--sf", type=float, default=None, help="TPC-H scale factor (default 1)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per (workload, reader) (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1: page cache hot)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="warm mode: every reader process runs the scan N times (rayquet: scan --repeat N); "
                         "reported: the median of runs 2..N (warm) and the first run (default 1: one "
                         "scan per process)")
    ap.add_argument("--rayquet-footer-cache", metavar="BYTES", default=None,
                    help="rayquet: scan --footer-cache BYTES, one footer cache its --repeat runs share "
                         "(as a service's scans would); default: none")
    ap.add_argument("--rayquet-mmap", action="store_true",
                    help="rayquet: scan --mmap on local files (memory-mapped, as polars reads them); "
                         "default: read into buffers")
    ap.add_argument("--readers", default=",".join(READERS), help="comma list (default: all)")
    ap.add_argument("--workloads", default="all",
                    help="comma list of workload ids or groups: all, local, s3 (default all)")
    ap.add_argument("--threads", type=int, default=2, help="threads per reader (default 2)")
    ap.add_argument("--peer-output", choices=["collect", "stream"], default="collect",
                    help="collect: polars collect(), pyarrow to_table(), duckdb to_arrow_table(); stream: "
                         "collect_batches(), to_batches(), to_arrow_reader() (rayquet's CLI always streams)")
    ap.add_argument("--pyarrow-io-threads-local", type=int, default=8, help="pa.set_io_thread_count locally (8)")
    ap.add_argument("--pyarrow-io-threads-s3", type=int, default=32, help="pa.set_io_thread_count on S3 (32)")
    ap.add_argument("--delays-ms", default="0,30,100",
                    help="first-byte delays of the S3 workloads, comma list (0,30,100): each S3 workload "
                         "runs at each")
    ap.add_argument("--server", choices=["s3-serve", "moto"], default="s3-serve",
                    help="the S3 endpoint: s3-serve (crates/bench, a path-style S3 endpoint over the shapes' "
                         "directories, delay built in, keep-alive) or moto_server (+ delay_proxy.py per delay; "
                         "moto spends more CPU than the readers and copies an object per range GET)")
    ap.add_argument("--s3-serve-bin", default=os.environ.get("RAYQUET_S3_SERVE_BIN"),
                    help="the s3-serve binary (run.sh builds it)")
    ap.add_argument("--small-file-bytes", type=float, default=1e6, help="S3 small shape file size (1e6)")
    ap.add_argument("--tiny-files", type=int, default=10000, help="S3 tiny shape file count (10000)")
    ap.add_argument("--tiny-file-bytes", type=float, default=1e4, help="S3 tiny shape file size (1e4)")
    ap.add_argument("--large-row-group-bytes", type=float, default=15e6, help="S3 large shape row group (15e6)")
    ap.add_argument("--huge-file-bytes", type=float, default=1e9,
                    help="S3 huge shape: one file of this size, in row groups of ~64 MB, the lineitem's "
                         "rows repeated when it has fewer (1e9). moto copies the whole object for every "
                         "range GET (~0.5 s for 900 MB), so on moto this shape measures moto: rayquet's "
                         "full scan took 80 s for 162 GETs (2026-12-07)")
    ap.add_argument("--bound-concurrency", type=int, default=0,
                    help="requests in flight assumed by the latency bound (0: one per file)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run before it is killed (600)")
    ap.add_argument("--data-dir", default=os.path.expanduser("~/.cache/rayquet/peers-data"))
    ap.add_argument("--out-dir", default=os.path.join(REPO, "benches", "results", "peers"))
    ap.add_argument("--rayquet-bin", default=os.environ.get("RAYQUET_BIN"), help="the rayquet binary")
    ap.add_argument("--rayquet-commit", default=None, help="commit the binary was built from (run.sh)")
    ap.add_argument("--tpchgen", default=os.path.join(os.path.dirname(sys.executable), "tpchgen-cli"))
    ap.add_argument("--pid-file", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.gnu_time = gnu_time_works()
    if args.scale_factor is None:
        args.scale_factor = 0.1 if args.quick else 1.0
    if args.runs is None:
        args.runs = 1 if args.quick else 5
    if args.repeat < 1:
        die("--repeat must be >= 1")
    if args.timeout is None:
        args.timeout = 120.0 if args.quick else 600.0
    if not args.rayquet_bin or not os.access(args.rayquet_bin, os.X_OK):
        die(f"no rayquet binary ({args.rayquet_bin!r}): pass --rayquet-bin or use run.sh")
    if not os.access(args.tpchgen, os.X_OK):
        die(f"tpchgen-cli not found at {args.tpchgen} (run through run.sh, which installs it)")
    try:
        args.delays_ms = [float(x) for x in args.delays_ms.split(",") if x.strip()]
    except ValueError:
        die(f"--delays-ms {args.delays_ms!r}: not a comma list of milliseconds")
    if any(d < 0 or math.isnan(d) for d in args.delays_ms):
        die(f"--delays-ms {args.delays_ms}: negative")
    if args.server == "s3-serve" and (not args.s3_serve_bin or not os.access(args.s3_serve_bin, os.X_OK)):
        die(f"no s3-serve binary ({args.s3_serve_bin!r}): pass --s3-serve-bin or use run.sh")
    args.readers = [r for r in args.readers.split(",") if r]
    for r in args.readers:
        if r not in READERS:
            die(f"unknown reader {r!r}; readers: {', '.join(READERS)}")
    all_w = workloads(args.delays_ms)
    chosen = []
    for item in args.workloads.split(","):
        if item == "all":
            chosen += all_w
        elif item in ("local", "s3"):
            chosen += [w for w in all_w if bool(w.get("s3")) == (item == "s3")]
        elif item.endswith("*"):
            match = [w for w in all_w if w["id"].startswith(item[:-1])]
            if not match:
                die(f"no workload id starts with {item[:-1]!r}")
            chosen += match
        else:
            match = [w for w in all_w if w["id"] == item]
            if not match:
                die(f"unknown workload {item!r}; workloads: {', '.join(w['id'] for w in all_w)}")
            chosen += match
    seen = set()
    args.workload_list = [w for w in chosen if not (w["id"] in seen or seen.add(w["id"]))]
    return args


def main(argv):
    args = parse_args(argv)
    servers = Servers(args.pid_file)

    def on_signal(signum, _frame):
        for pid in list(RUNNING):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        servers.stop()
        log(f"interrupted (signal {signum}); servers stopped")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return run(args, servers)
    finally:
        servers.stop()


def run(args, servers):
    os.makedirs(args.data_dir, exist_ok=True)
    os.makedirs(args.out_dir, exist_ok=True)
    env = child_env(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = machine_info()

    r = spawn([sys.executable, __file__, "_versions"], env, 120)
    versions = json_from_output(r["stdout"]) or die(f"cannot read versions:\n{r['stderr'][-2000:]}")
    versions["tpchgen-cli"] = (run_quiet([args.tpchgen, "--version"]) or "").split()[-1]
    rayquet_version = run_quiet([args.rayquet_bin, "--version"])
    commit = args.rayquet_commit or run_quiet(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=12"])

    # Data.
    lineitem, li_meta = generate_lineitem(args, args.data_dir)
    wl = args.workload_list
    shapes, shape_dirs = {}, {"lineitem": lineitem}
    for name, files, groups, target in (("small", 100, 1, args.small_file_bytes),
                                        ("large", 4, 2, args.large_row_group_bytes),
                                        ("tiny", args.tiny_files, 1, args.tiny_file_bytes),
                                        ("huge", 1, max(1, round(args.huge_file_bytes / 64e6)), 64e6)):
        if any(w["source"] == name for w in wl):
            shape_dirs[name], have = derive_shape(args, lineitem, args.data_dir, name, files, groups, target,
                                                  cycle=name == "huge")
            shapes[name] = have["shape"]

    r = spawn([sys.executable, __file__, "_reference", json.dumps({
        "threads": args.threads,
        "workloads": [{"id": w["id"], "path": shape_dirs[w["source"]], "filter": w.get("filter")} for w in wl]})],
        env, 3600)
    expected = json_from_output(r["stdout"])
    if r["rc"] != 0 or expected is None:
        die(f"DuckDB reference counts failed:\n{r['stderr'][-3000:]}")

    # S3: one endpoint per first-byte delay of the chosen workloads.
    endpoints, watched_by_delay, counters, bounds, notes = {}, {}, {}, {}, []
    skipped = {}
    delays = sorted({w["delay_ms"] for w in wl if w.get("s3")})
    if delays:
        if args.server == "s3-serve":
            root = s3_serve_root(args.data_dir, shape_dirs, shapes)
            for d in sorted(set(delays) | {0.0}):
                endpoints[d], p = start_s3_serve(args, servers, root, d)
                watched_by_delay[d] = {"server": p}
                counters[d] = ServeStats(endpoints[d])
            log(f"s3: s3-serve over {root}, delays {', '.join(f'{d:g}' for d in endpoints)} ms")
        else:
            moto_log_path = os.path.join(args.data_dir, "moto.log")
            open(moto_log_path, "w").close()
            log("s3: starting moto_server")
            moto_endpoint, moto = start_moto(args, servers, moto_log_path)
            status, body = http_request(moto_endpoint, "PUT", f"/{BUCKET}")
            if status not in (200, 409):
                die(f"create bucket on moto: HTTP {status} {body[:300]!r}")
            for name in shapes:
                log(f"s3: uploading shape {name}")
                upload_dir(moto_endpoint, shape_dirs[name], name)
            moto_log = MotoLog(moto_log_path)
            endpoints[0.0], watched_by_delay[0.0], counters[0.0] = moto_endpoint, {"server": moto}, moto_log
            for d in delays:
                if d:
                    endpoints[d], proxy = start_proxy(servers, moto_endpoint, d)
                    watched_by_delay[d] = {"server": moto, "proxy": proxy}
                    counters[d] = moto_log
            # The proxy: its own keep-alive self-test (moto answers `Connection: close`, so with
            # moto every request is a new loopback connection), then the delay in front of moto.
            if any(delays):
                r = spawn([sys.executable, os.path.join(HERE, "delay_proxy.py"), "--self-test",
                           "--delay-ms", f"{max(delays):g}"], os.environ.copy(), 60)
                notes.append("delay proxy " + (r["stdout"].strip() or r["stderr"].strip()[-500:]))
                log("s3: " + notes[-1])
                if r["rc"] != 0:
                    die("the delay proxy's self-test failed")
        first = sorted(os.listdir(shape_dirs[next(iter(shapes))]))[0]
        probe = f"/{BUCKET}/{next(iter(shapes))}/{first}"
        ttfb = {}
        for d, ep in endpoints.items():
            ttfb[d] = time_to_first_byte(ep, probe)
            if min(ttfb[d]) < d / 1e3:
                die(f"the {d:g} ms endpoint did not hold every first byte")
        notes.append(f"{args.server}: time to first byte of a 1-byte range GET, 3 times: " + "; ".join(
            f"{d:g} ms delay: {', '.join(f'{x * 1e3:.1f}' for x in t)} ms" for d, t in ttfb.items()))
        log("s3: " + notes[-1])
        # Latency bounds: round trips x delay + bytes / bandwidth. The bandwidth is measured: the
        # harness GETs every object of each shape whole and concurrently (16 plain-HTTP threads,
        # keep-alive where the server allows it) without delay, best of 3; the best rate over the
        # shapes (large objects: the least per-request overhead) is the bandwidth.
        plain = {}
        for name in shapes:
            names = sorted(os.listdir(shape_dirs[name]))
            best = None
            for _ in range(3):
                secs, nbytes = measure_transfer(endpoints[0.0], name, names, min(len(names), 16))
                best = secs if best is None else min(best, secs)
            plain[name] = {"seconds": best, "bytes": nbytes, "files": len(names)}
            log(f"s3: shape {name}: {nbytes / 2**20:.1f} MiB fetched whole by 16 plain-HTTP threads in "
                f"{best:.3f} s ({nbytes / best / 2**20:.0f} MiB/s) without delay")
        bw = max(p["bytes"] / p["seconds"] for p in plain.values())
        for name, sh in shapes.items():
            for d in delays:
                wid = s3_id(name, "", d)
                if not any(w["id"] == wid for w in wl):
                    continue
                files, nbytes = plain[name]["files"], plain[name]["bytes"]
                conc = args.bound_concurrency or files
                waves = math.ceil(files / conc)
                # A listing page holds 1,000 keys, each page needs the one before. Files up to
                # 2 MiB can be read whole (size known from the listing): 1 GET per wave; larger
                # ones need the footer before the data: 2 per wave.
                lists = math.ceil(files / 1000)
                per_file = 1 if sh["file_bytes_max"] <= 2 * 2**20 else 2
                rts = lists + per_file * waves
                bounds[wid] = {"round_trips": rts, "delay_ms": d, "bytes": nbytes, "files": files,
                               "concurrency": conc, "bandwidth_Bps": bw, "transfer_s": nbytes / bw,
                               "plain_get_s": plain[name]["seconds"],
                               "latency_bound_s": rts * d / 1e3 + nbytes / bw,
                               "formula": f"({lists} LIST + {per_file} x ceil({files} files / {conc})) "
                                          f"x {d:g} ms + bytes / bandwidth"}
        if "duckdb" in args.readers and not versions.get("duckdb_httpfs", "").startswith("loads"):
            for w in wl:
                if w.get("s3"):
                    skipped.setdefault(w["id"], {})["duckdb"] = "httpfs extension unavailable"
            notes.append(f"duckdb skipped on S3: {versions.get('duckdb_httpfs')}")
            log(notes[-1])

    # Runs.
    all_runs = []
    result_workloads = []
    failures = 0
    for w in wl:
        s3 = bool(w.get("s3"))
        if s3:
            location = {"kind": "s3", "endpoint": endpoints[w["delay_ms"]], "bucket": BUCKET, "prefix": w["source"]}
        else:
            location = {"kind": "local", "path": shape_dirs[w["source"]]}
        watched = watched_by_delay.get(w["delay_ms"], {}) if s3 else {}
        exp = expected[w["id"]]
        readers = [r for r in args.readers if not skipped.get(w["id"], {}).get(r)]
        log(f"\n{w['id']}: {w['desc']} ({exp} rows); load average {' '.join(map(str, loadavg() or []))}")
        broken = set()
        total = args.warmup + args.runs
        for i in range(total):
            order = readers[i % len(readers):] + readers[:i % len(readers)]  # rotate the order
            for reader in order:
                if reader in broken:
                    continue
                run = one_run(args, env, reader, w, location, exp, counters.get(w["delay_ms"]) if s3 else None,
                              watched)
                run["run"] = i - args.warmup + 1  # <= 0: warm-up
                all_runs.append(run)
                tag = "warm-up" if run["run"] <= 0 else f"run {run['run']}"
                if run["ok"]:
                    extra = ""
                    if "server_requests" in run:
                        extra = f", {run['server_requests']['requests']} requests"
                    if args.repeat > 1:
                        extra += f", first {run['first_seconds']:.3f} s"
                    log(f"  {tag:8s} {reader:8s} {run['seconds']:.3f} s (process {run['process_wall']:.3f} s, "
                        f"RSS {run['peak_rss_kib'] / 1024:.0f} MiB{extra})")
                else:
                    failures += 1
                    log(f"  {tag:8s} {reader:8s} FAILED: {run['error']}")
                    if run["run"] <= 0 or "ROWS DIFFER" not in run["error"]:
                        broken.add(reader)
        summary = {r: summarize([x for x in all_runs if x["workload"] == w["id"] and x["reader"] == r])
                   for r in readers}
        rw = dict(w, expected_rows=exp, location=location, summary=summary)
        if skipped.get(w["id"]):
            rw["skipped"] = skipped[w["id"]]
        result_workloads.append(rw)

    for wid, b in bounds.items():
        # The practical bound: the latency bound, or the fastest reader without delay if slower.
        nodelay = next((x for x in result_workloads if x["id"] == wid.split("+")[0]), None)
        if nodelay:
            meds = [s["median"] for s in nodelay["summary"].values() if s]
            if meds:
                b["practical_bound_s"] = max(b["latency_bound_s"], min(meds))

    mode = "quick" if args.quick else "full"
    meta = {
        "title": f"rayquet vs polars, pyarrow, duckdb: TPC-H lineitem SF {args.scale_factor:g}"
                 + (f", warm ({args.repeat} scans per process)" if args.repeat > 1 else "")
                 + (" (quick: plumbing check, not a measurement)" if args.quick else ""),
        "mode": mode, "date": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
        "rayquet_bin": args.rayquet_bin, "rayquet_version": rayquet_version,
        "rustc": run_quiet(["rustc", "--version"]), "versions": versions, "machine": machine,
        "scale_factor": args.scale_factor, "runs": args.runs, "warmup": args.warmup,
        "repeat": args.repeat, "rayquet_footer_cache": args.rayquet_footer_cache,
        "rayquet_mmap": args.rayquet_mmap,
        "threads": args.threads, "readers": args.readers, "peer_output": args.peer_output,
        "pyarrow_io_threads": {"local": args.pyarrow_io_threads_local, "s3": args.pyarrow_io_threads_s3},
        "delays_ms": args.delays_ms, "server": args.server, "lineitem": {"path": lineitem, **li_meta}, "shapes": shapes,
        "bounds": bounds, "notes": notes, "filters_sql": FILTERS,
        "timers": {
            "seconds": "the reader's own in-process timer: rayquet --json `seconds` (Scan build "
                       "to last batch); Python readers: time.perf_counter() after imports and "
                       "thread/IO setup, around discovery + read + collect/drain",
            "process_wall": "parent's wall clock from spawn to exit (includes start-up, imports)",
            "peak_rss": "Python readers: VmHWM read by the reader at the end; rayquet: "
                        + ("GNU time's %M (max RSS of rayquet alone)" if args.gnu_time else
                           "ru_maxrss from wait4 (no /usr/bin/time; Linux carries the parent's RSS at "
                           f"fork into it: the parent's VmHWM, {(vm_hwm_kib() or 0) / 1024:.0f} MiB, is "
                           "the floor)"),
        },
        "parent_vm_hwm_kib": vm_hwm_kib(),
        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    result = {"meta": meta, "workloads": result_workloads, "runs": all_runs}
    stem = "peers-quick" if args.quick else "peers"
    if args.repeat > 1:
        stem += "-warm"
    paths = {ext: os.path.join(args.out_dir, f"{stem}.{ext}") for ext in ("json", "md", "svg")}
    with open(paths["json"], "w") as f:
        json.dump(result, f, indent=1)
    md = markdown(result)
    with open(paths["md"], "w") as f:
        f.write(md)
    with open(paths["svg"], "w") as f:
        f.write(svg(result))
    print(md)
    for note in notes:
        print(f"note: {note}")
    log(f"wrote {paths['json']}, {paths['md']}, {paths['svg']}")
    if failures:
        log(f"{failures} run(s) failed or delivered the wrong row count (see above and the JSON)")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        cmd = sys.argv[1]
        if cmd == "_one":
            child_one(json.loads(sys.argv[2]))
        elif cmd == "_reference":
            child_reference(json.loads(sys.argv[2]))
        elif cmd == "_versions":
            child_versions()
        elif cmd == "_derive":
            ap = argparse.ArgumentParser()
            for a in ("--src", "--out"):
                ap.add_argument(a, required=True)
            ap.add_argument("--files", type=int, required=True)
            ap.add_argument("--row-groups", type=int, required=True)
            ap.add_argument("--target-bytes", type=float, required=True)
            ap.add_argument("--cycle", action="store_true")
            child_derive(ap.parse_args(sys.argv[2:]))
        else:
            die(f"unknown internal command {cmd}")
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
