"""The TPC-H tables (tpchgen-cli, one Parquet file each, in SRC) rewritten as Delta tables with
deltalake under OUT, statistics in the log as deltalake writes them.

python tpch_delta.py SRC OUT
"""
import sys, os, shutil, pyarrow.parquet as pq
from deltalake import write_deltalake
src, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
for f in sorted(os.listdir(src)):
    t = pq.read_table(os.path.join(src, f))
    write_deltalake(os.path.join(out, f.removesuffix(".parquet")), t)
    print(f, t.num_rows)
