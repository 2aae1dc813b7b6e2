"""Copies a TPC-H directory (one `<table>.parquet` per table) with lineitem rewritten by DuckDB
in `l_comment` order (row groups of 122,880 rows, DuckDB's statistics), for the
`LIKE 'prefix%'` queries of this directory: a string column the rows are sorted by, as log
paths, URLs or names often are. The other tables are linked. Needs the `duckdb` package (the
TPC-H benchmark's `--python` has it).

    python benches/tpch/like/write.py <tpch-sf1> <out>
"""
import os
import sys

import duckdb

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for name in sorted(os.listdir(src)):
    if not name.endswith(".parquet"):
        continue
    dst = os.path.join(out, name)
    if name != "lineitem.parquet":
        if not os.path.exists(dst):
            os.symlink(os.path.abspath(os.path.join(src, name)), dst)
        continue
    duckdb.sql(
        f"COPY (SELECT * FROM '{os.path.join(src, name)}' ORDER BY l_comment) TO '{dst}' "
        "(FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 122880)"
    )
    groups = duckdb.sql(f"SELECT max(row_group_id) + 1 FROM parquet_metadata('{dst}')").fetchone()
    print(dst, groups[0], "row groups")
