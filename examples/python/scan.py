"""rayquet from Python: a Parquet dataset read on every core, three ways (a one-pass reader,
a reusable dataset, a lazy polars frame), on a demo file this script writes.

    pip install ./python polars        # or the wheel: README, "Python"
    python examples/python/scan.py [DIR]

CI runs it against the installed wheel and checks it with ``mypy --strict`` (the package's
type stubs).
"""

from __future__ import annotations

import os
import sys
import tempfile

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import rayquet
import rayquet.polars as rqpl


def main(directory: str) -> None:
    path = os.path.join(directory, "demo.parquet")
    n = 1_000_000
    pq.write_table(
        pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array([i % 7 for i in range(n)], pa.int32())}),
        path,
        row_group_size=100_000,
    )

    # One pass: iterate for pyarrow.RecordBatches, or read_all() for a table.
    reader = rayquet.scan(path, columns=["id"], filter="x = 3 AND id < 1000")
    table: pa.Table = reader.read_all()
    pruned = reader.metrics()["row_groups_pruned"]
    print(f"scan: {table.num_rows} rows, {pruned:.0f} row groups pruned")

    # Reusable: a fresh scan per call.
    ds = rayquet.dataset(path)
    print(f"dataset: {ds.count()} rows, {ds.count('x = 3')} with x = 3, schema {ds.schema.names}")

    # Lazy polars: projection, predicate and limit pushed into the scan.
    out = rqpl.scan_parquet(path).filter(pl.col("x") == 3).group_by("x").agg(pl.len()).collect()
    print(out)
    assert out["len"][0] == ds.count("x = 3")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as d:
            main(d)
