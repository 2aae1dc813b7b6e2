"""200 appends of 5,000 rows each to an Iceberg table (pyiceberg, SQL catalog: 200 manifests and data
files) and to a Delta table (deltalake: 200 commits), under OUT; prints the Iceberg metadata path.
For planning costs (BENCHMARKS.md, "Statistics from Iceberg manifests and the Delta log").

python many_appends.py OUT   # pyiceberg, deltalake, pyarrow (the real-writers venv has them)
"""
import sys, os, shutil, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from deltalake import write_deltalake
out = sys.argv[1]
shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
cat = SqlCatalog("c", uri=f"sqlite:///{out}/cat.db", warehouse=f"file://{out}/wh")
cat.create_namespace("n")
import random; rng = random.Random(1)
def batch(i):
    n = 5000
    return pa.table({"id": pa.array(range(i*n, (i+1)*n), pa.int64()),
                     "k": pa.array([rng.randrange(1000) for _ in range(n)], pa.int32()),
                     "amount": pa.array([rng.random() for _ in range(n)]),
                     "name": pa.array([f"name-{j % 977}" for j in range(n)])})
t = cat.create_table("n.t", schema=batch(0).schema)
for i in range(200):
    b = batch(i)
    t.append(b)
    write_deltalake(f"{out}/delta", b, mode="append")
print(t.metadata_location)
