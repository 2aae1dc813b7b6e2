"""Copies a TPC-H directory (one `<table>.parquet` per table) with lineitem and orders rewritten
to declare the order their rows are in (`sorting_columns`: the order key, ascending), for the
queries of this directory. The other tables are linked.

    python benches/tpch/sorted/write.py <tpch-sf1> <out>
"""
import os
import sys

import pyarrow.compute as pc
import pyarrow.parquet as pq

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for name in sorted(os.listdir(src)):
    if not name.endswith(".parquet"):
        continue
    table, dst = name[: -len(".parquet")], os.path.join(out, name)
    if table not in ("lineitem", "orders"):
        if not os.path.exists(dst):
            os.symlink(os.path.abspath(os.path.join(src, name)), dst)
        continue
    t = pq.read_table(os.path.join(src, name))
    key = t.column(0)
    # tpchgen writes both tables in order-key order; the declaration must be true.
    assert pc.all(pc.greater_equal(key.slice(1), key.slice(0, len(key) - 1))).as_py(), name
    pq.write_table(t, dst, row_group_size=113_000, compression="snappy",
                   sorting_columns=[pq.SortingColumn(0)])
    print(dst, pq.ParquetFile(dst).metadata.num_row_groups, "row groups")
